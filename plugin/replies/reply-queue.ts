// The reply queue: every run's reply on its way to a chat, in both hosts. A reply is kept `pending`
// before its first try; the host makes single tries (`host.replies.send`); a failure that may pass
// (the network, a 429, a 5xx) is `retrying` on hooks.retry, never before a platform's announced
// wait, from the first part not yet sent; a reply sent is `sent`; one refused or out of tries is
// `failed`, a dead letter told to the listeners (the failure book). What is not settled lives in a
// state file, so a start resumes it (at least once: a send cut by a crash is sent again). The host's
// history (the standalone's outbox) hears every change in order. A channel that only records (no
// credentials) is recorded and never queued. A reply with fallback channels that fails for good goes
// to the next one as a delivery of its own naming the one it replaces; only the last one's failure is
// a dead letter.
import { randomUUID } from 'node:crypto';
import type { Delivery, DeliveryFact, DeliveryReceipt, GatewayHost, ReplyState, Route, SendResult } from '../host.ts';
import { DueQueue } from '../retry/due-queue.ts';
import { spreadOverdue } from '../retry/overdue.ts';
import { mayRetry, retryDelayMs, type RetryPolicy } from '../retry/retry-policy.ts';
import { StateFile } from '../util/state-file.ts';
import { errorMessage } from '../util/errors.ts';
import { oneLine, truncate } from '../util/text.ts';
import type { HookMetrics } from '../observe/metrics.ts';
import { deliveryOf, entryOf, isKeptReply, replyRecordOf, type ReplyRecord } from './reply-record.ts';
import { cachedRedactor } from '../util/secret-redactor.ts';

/** How long replies left by the last process wait before their first try after a start. */
const RESUME_GRACE_MS = 1000;
/** After the stop's abort, how long tries get to notice it before the state file closes. */
const ABORT_SETTLE_MS = 1000;
const REASON_MAX = 300;
const reasonLine = (text: string): string => truncate(oneLine(text), REASON_MAX);

/** A reply handed to the queue: the delivery and the hook whose run produced it. */
export interface QueuedReply extends Delivery {
  /** The run's name, as failures show it. */
  hook: string;
  /** The endpoint or mapping id that accepted the run (AcceptedRun.hookId). */
  hookId?: string;
  /** Where the reply goes, in order, when the delivery to `channel` failed for good. */
  fallbacks?: readonly Route[];
}

/** A reply that used its tries or was refused for good: what the failure book records. */
export interface ReplyDeadLetter {
  kind: 'delivery';
  runId: string;
  hook: string;
  /** The endpoint or mapping id that accepted the run, when known. */
  hookId?: string;
  agentId: string;
  channel: Delivery['channel'];
  to?: string;
  /** Tries made, the first included. */
  attempts: number;
  lastError: string;
  /** The reply, for a replay to send again. */
  text: string;
  firstAt: string;
  lastAt: string;
}

export interface ReplyQueueOptions {
  host: Pick<GatewayHost, 'logger' | 'replies' | 'secrets' | 'fileSync'>;
  /** The state file of the replies not settled; undefined: memory only (nothing resumes). */
  file: string | undefined;
  /** hooks.retry as the config has it now. */
  retry: () => Readonly<RetryPolicy>;
  metrics: Pick<HookMetrics, 'retryScheduled'> & Partial<Pick<HookMetrics, 'replyFallback'>>;
}

interface Job {
  /** The reply in its latest state, as the state file has it. */
  record: ReplyRecord;
  /** Settles the receipt of the process that queued it (none for a resumed one). */
  tell?: (fact: DeliveryFact) => void;
}

/** The first try of a reply whose run waits for it (host.replies.firstTryInRun) was refused. */
export class ReplyRefused extends Error {}

export class ReplyQueue {
  readonly #opts: ReplyQueueOptions;
  readonly #state: StateFile<ReplyRecord>;
  readonly #retries: DueQueue<Job>;
  readonly #sending = new Set<Promise<unknown>>();
  /** Replies this process queued and has not settled: a resume leaves them alone. */
  readonly #mine = new Set<string>();
  readonly #deadLetterListeners: ((letter: ReplyDeadLetter) => void | Promise<void>)[] = [];
  readonly #stop = new AbortController();
  readonly #redact: (text: string) => string;
  #closing = false;
  #closed = false;

  static async open(opts: ReplyQueueOptions): Promise<ReplyQueue> {
    const kept = await StateFile.open(opts.file, isKeptReply, opts.host.logger, { sync: opts.host.fileSync });
    const state = kept as StateFile<ReplyRecord>;
    // Records in an older shape are written again in today's.
    for (const [id, value] of kept.records) {
      const record = replyRecordOf(value, id)!;
      if (record !== value) await state.put(id, record);
    }
    return new ReplyQueue(opts, state);
  }

  private constructor(opts: ReplyQueueOptions, state: StateFile<ReplyRecord>) {
    this.#opts = opts;
    this.#state = state;
    this.#retries = new DueQueue<Job>((job) => void this.#attempt(job));
    this.#redact = cachedRedactor(() => opts.host.secrets?.() ?? []);
  }

  /** Told of every dead letter, once. */
  onDeadLetter(listener: (letter: ReplyDeadLetter) => void | Promise<void>): void {
    this.#deadLetterListeners.push(listener);
  }

  /** Replies waiting for their outcome: pending or retrying. */
  get pending(): number {
    return this.#state.size;
  }

  /**
   * Queues a reply; resolves once it is kept (and, where the host asks for it, once its first try is
   * over: a refusal there rejects with ReplyRefused). The receipt settles after the last try.
   */
  async add(reply: QueuedReply): Promise<DeliveryReceipt> {
    const { replies } = this.#opts.host;
    const to = reply.to ?? replies.defaultTo?.(reply.channel);
    const delivery: Delivery = {
      channel: reply.channel,
      ...(to !== undefined ? { to } : {}),
      text: reply.text,
      runId: reply.runId,
      agentId: reply.agentId,
    };
    const at = new Date().toISOString();
    if (replies.sends && !replies.sends(reply.channel)) {
      await replies.history?.added({ ...delivery, at, status: 'recorded' });
      return { outcome: Promise.resolve(factOf(delivery, 'recorded')) };
    }
    const record: ReplyRecord = {
      id: randomUUID(),
      ...delivery,
      hook: reply.hook,
      ...(reply.hookId !== undefined ? { hookId: reply.hookId } : {}),
      at,
      status: 'pending',
      ...(reply.fallbacks?.length ? { fallbacks: reply.fallbacks.map((f) => ({ ...f })) } : {}),
    };
    this.#mine.add(record.id);
    // The work first: a crash between the two writes sends a reply the history lacks, never loses one.
    await this.#state.put(record.id, { ...record });
    await replies.history?.added(entryOf(record));
    let tell!: (fact: DeliveryFact) => void;
    const outcome = new Promise<DeliveryFact>((resolve) => (tell = resolve));
    // Queued while stopping: it stays pending, for the next start to send.
    if (this.#closing) return { outcome };
    const first = this.#attempt({ record, tell }, replies.firstTryInRun === true);
    if (replies.firstTryInRun) {
      const refusal = await first;
      if (refusal !== undefined) throw new ReplyRefused(refusal);
    }
    return { outcome };
  }

  /**
   * Takes up what the last process left: each when due, a pending one when it was queued; those whose
   * time passed while the process was down go in that order, spread as they were due (at most
   * hooks.retry.initialDelaySeconds apart: retry/overdue.ts), never in one burst.
   */
  resume(): number {
    const open = [...this.#state.records.values()].filter((r) => !this.#mine.has(r.id));
    // The last process's sends are unknown to the host's pacers: waiting out the one-second windows
    // most platforms count in keeps a quick restart from earning a 429.
    const notBefore = Date.now() + RESUME_GRACE_MS;
    const waiting = open.map((record) => ({
      item: record,
      dueAt: Date.parse((record.status === 'retrying' ? record.nextAttemptAt : undefined) ?? record.at),
    }));
    const maxGapMs = this.#opts.retry().initialDelaySeconds * 1000;
    for (const { item, at } of spreadOverdue(waiting, notBefore, maxGapMs)) {
      this.#retries.add(item.id, at, { record: { ...item } });
    }
    return open.length;
  }

  /**
   * Stops taking tries; tries under way get `graceMs` to finish, then are aborted. What is not
   * settled stays pending or retrying (with the parts already sent), for the next start.
   */
  async close(graceMs: number): Promise<void> {
    this.#closing = true;
    this.#retries.close();
    this.#opts.host.replies.stop?.();
    await settledWithin([...this.#sending], graceMs);
    this.#stop.abort();
    // A host whose try ignores the abort is not waited for: its reply stays as kept, and is resumed.
    await settledWithin([...this.#sending], ABORT_SETTLE_MS);
    this.#closed = true;
    await this.#state.close();
  }

  /** One try, then its outcome kept. Resolves with the refusal's reason when `inRun` and refused. */
  #attempt(job: Job, inRun = false): Promise<string | undefined> {
    if (this.#closing) return Promise.resolve(undefined);
    const { record } = job;
    const before = record.messageIds ?? [];
    const tried = this.#send(record, before)
      .then((result) => this.#afterTry(job, result, before, inRun))
      .catch((err: unknown) => {
        this.#opts.host.logger.error('a reply delivery could not be recorded', {
          channel: record.channel,
          runId: record.runId,
          deliveryId: record.id,
          reason: reasonLine(errorMessage(err)),
        });
        return undefined;
      })
      .finally(() => this.#sending.delete(tried));
    this.#sending.add(tried);
    return tried;
  }

  async #send(record: ReplyRecord, before: string[]): Promise<SendResult> {
    try {
      return await this.#opts.host.replies.send(deliveryOf(record), {
        signal: this.#stop.signal,
        fromPart: record.partsSent ?? 0,
        onPart: (partsSent, ids) => this.#progress(record, partsSent, [...before, ...ids]),
        maxWaitMs: this.#opts.retry().maxDelaySeconds * 1000,
      });
    } catch (err) {
      // The contract says a try never throws; one that does is a refusal, named without its text.
      const reason = err instanceof Error ? err.name : typeof err;
      return {
        status: 'failed',
        retryable: false,
        description: `the host could not send (${reason})`,
        sentParts: 0,
        messageIds: [],
      };
    }
  }

  /** A part of a split reply went out: noted, so a crash does not send it again. */
  #progress(record: ReplyRecord, partsSent: number, messageIds: string[]): void {
    Object.assign(record, { partsSent, messageIds });
    this.#keep(record).catch((err: unknown) => {
      this.#opts.host.logger.error('reply progress could not be recorded', {
        deliveryId: record.id,
        reason: reasonLine(errorMessage(err)),
      });
    });
  }

  async #afterTry(job: Job, result: SendResult, before: string[], inRun: boolean): Promise<string | undefined> {
    const { record } = job;
    const messageIds = [...before, ...result.messageIds];
    if (result.status === 'sent') {
      const attempts = record.attempts?.length ? { attempts: record.attempts } : {};
      await this.#settle(job, { status: 'sent', messageIds, ...attempts });
      return undefined;
    }
    if (result.sentParts > (record.partsSent ?? 0)) Object.assign(record, { partsSent: result.sentParts, messageIds });
    if (this.#closing && result.retryable) {
      // Cut by the stop: the state stays as it was, with the parts sent since.
      await this.#keep(record);
      return undefined;
    }
    // The platform's text may echo a credential of the host's, in any form: masked before it is kept.
    const description = reasonLine(this.#redact(result.description));
    const now = Date.now();
    record.attempts = [...(record.attempts ?? []), { at: new Date(now).toISOString(), error: description }];
    const policy = this.#opts.retry();
    if (result.retryable && mayRetry(policy, record.attempts.length)) {
      const dueAt = now + retryDelayMs(policy, record.attempts.length, result.waitMs);
      Object.assign(record, { status: 'retrying', nextAttemptAt: new Date(dueAt).toISOString() });
      await this.#keep(record, true);
      this.#opts.metrics.retryScheduled('delivery');
      this.#opts.host.logger.warn('a reply delivery failed; trying again later', {
        channel: record.channel,
        runId: record.runId,
        deliveryId: record.id,
        attempt: record.attempts.length,
        nextAttemptAt: record.nextAttemptAt,
        reason: description,
      });
      this.#retries.add(record.id, dueAt, job);
      return undefined;
    }
    const { nextAttemptAt: _next, ...rest } = stateOf(record);
    if (record.fallbacks?.length) {
      // Failed here, and the reply has somewhere else to go: no dead letter, not the run's error.
      await this.#fallBack(job, { ...rest, status: 'failed', error: description });
      return undefined;
    }
    await this.#settle(job, { ...rest, status: 'failed', error: description });
    // Refused at a first try its run waits for: the run's error, not a dead letter.
    if (inRun) return description;
    this.#opts.host.logger.warn('a reply delivery failed for good', {
      channel: record.channel,
      runId: record.runId,
      deliveryId: record.id,
      attempts: record.attempts.length,
      reason: description,
    });
    await this.#deadLetter(record, description);
    return undefined;
  }

  /**
   * The delivery failed for good: the reply goes to the next fallback channel (its `to`, else that
   * channel's default) as a delivery of its own naming this one. The new one is kept before this one
   * is dropped, so a crash between the two sends the reply again rather than losing it. The
   * receipt follows the chain: it settles with the last delivery's outcome.
   */
  async #fallBack(job: Job, failed: ReplyState & { status: 'failed' }): Promise<void> {
    const { record } = job;
    const [next, ...rest] = record.fallbacks!;
    const { replies } = this.#opts.host;
    const to = next!.to ?? replies.defaultTo?.(next!.channel);
    const fallback: ReplyRecord = {
      id: randomUUID(),
      channel: next!.channel,
      ...(to !== undefined ? { to } : {}),
      text: record.text,
      runId: record.runId,
      agentId: record.agentId,
      ...(record.hook !== undefined ? { hook: record.hook } : {}),
      ...(record.hookId !== undefined ? { hookId: record.hookId } : {}),
      at: new Date().toISOString(),
      status: 'pending',
      ...(rest.length ? { fallbacks: rest } : {}),
      fallbackOf: record.id,
    };
    this.#opts.host.logger.warn('a reply delivery failed for good; the reply goes to the next channel', {
      channel: record.channel,
      runId: record.runId,
      deliveryId: record.id,
      fallbackChannel: fallback.channel,
      fallbackId: fallback.id,
      reason: failed.error,
    });
    this.#opts.metrics.replyFallback?.(record.channel, fallback.channel);
    if (replies.sends && !replies.sends(fallback.channel)) {
      // A channel that only records: recorded, and the chain ends there.
      await this.#settle({ record }, failed);
      const { id: _id, status: _status, ...entry } = entryOf(fallback);
      await replies.history?.added({ ...entry, status: 'recorded' });
      job.tell?.(factOf(fallback, 'recorded'));
      return;
    }
    this.#mine.add(fallback.id);
    await this.#state.put(fallback.id, { ...fallback });
    await this.#settle({ record }, failed);
    await replies.history?.added(entryOf(fallback));
    // Queued while stopping: it stays pending, for the next start to send.
    if (this.#closing) return;
    void this.#attempt({ record: fallback, ...(job.tell ? { tell: job.tell } : {}) });
  }

  /** The last state: told to the history, the record dropped, the receipt settled. */
  async #settle(job: Job, state: ReplyState & { status: 'sent' | 'failed' }): Promise<void> {
    const { record } = job;
    await this.#opts.host.replies.history?.changed(entryOf(record), state, true);
    if (!this.#closed) await this.#state.remove(record.id);
    this.#mine.delete(record.id);
    job.tell?.(factOf(record, state.status));
  }

  /** An unsettled reply's new state: in the state file (for a start) and the history (for people). */
  async #keep(record: ReplyRecord, moved = false): Promise<void> {
    if (this.#closed) return;
    await Promise.all([
      this.#state.put(record.id, { ...record }),
      this.#opts.host.replies.history?.changed(entryOf(record), stateOf(record), moved),
    ]);
  }

  async #deadLetter(record: ReplyRecord, lastError: string): Promise<void> {
    const attempts = record.attempts ?? [];
    const letter: ReplyDeadLetter = {
      kind: 'delivery',
      runId: record.runId,
      hook: record.hook ?? 'unknown',
      ...(record.hookId !== undefined ? { hookId: record.hookId } : {}),
      agentId: record.agentId,
      channel: record.channel,
      ...(record.to !== undefined ? { to: record.to } : {}),
      attempts: attempts.length,
      lastError,
      text: record.text,
      firstAt: record.at,
      lastAt: attempts.at(-1)?.at ?? new Date().toISOString(),
    };
    for (const listener of this.#deadLetterListeners) {
      try {
        await listener(letter);
      } catch (err) {
        this.#opts.host.logger.error('a failed reply delivery could not be recorded', {
          runId: record.runId,
          deliveryId: record.id,
          reason: reasonLine(errorMessage(err)),
        });
      }
    }
  }
}

/** The state fields of a record, as the history's change carries them. */
function stateOf(record: ReplyRecord): ReplyState {
  return {
    status: record.status,
    ...(record.messageIds?.length ? { messageIds: record.messageIds } : {}),
    ...(record.attempts?.length ? { attempts: record.attempts } : {}),
    ...(record.nextAttemptAt !== undefined ? { nextAttemptAt: record.nextAttemptAt } : {}),
    ...(record.partsSent ? { partsSent: record.partsSent } : {}),
  };
}

function factOf(d: Pick<Delivery, 'channel' | 'to'>, status: DeliveryFact['status']): DeliveryFact {
  return { channel: d.channel, ...(d.to !== undefined ? { to: d.to } : {}), status };
}

/** Waits for the promises to settle, at most `ms`. */
async function settledWithin(promises: Promise<unknown>[], ms: number): Promise<void> {
  if (!promises.length) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, ms)))),
  ]);
  clearTimeout(timer);
}
