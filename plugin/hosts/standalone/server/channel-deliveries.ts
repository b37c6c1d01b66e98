// Replies on their way to chat channels. A channel with credentials sends: the delivery is written
// `pending` to the outbox before the first attempt, sent through the channel senders (split, paced)
// and each change of state appended: `sent` with the platform's message ids, `retrying` (a network
// failure, a 429 or a 5xx, tried again on hooks.retry, never before a 429's announced wait, from the
// first part not yet sent) or `failed`, a dead letter handed to `onFailed`. One due queue holds every
// scheduled retry. The deliveries not settled are also kept in a state file of their own (the outbox
// is history, this is the work left), so a start resumes what the last process left pending or
// retrying. A channel without credentials only records. The run that produced the reply waits for
// the pending entry only; the receipt's outcome settles after the last attempt.

import { randomUUID } from 'node:crypto';
import type { ChannelName, Delivery, DeliveryFact, DeliveryReceipt, Logger } from '../../../host.ts';
import { DueQueue, mayRetry, retryDelayMs, StateFile, type RetryPolicy } from '../../../kits/admin.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import type { Channel, DeliveryResult, Redactor, ResolvedChannels } from '../../../../channels/index.ts';
import { isUnsettledDelivery, type DeliveryState, type Outbox, type UnsettledDelivery } from '../storage/index.ts';
import { errorMessage } from '../../../util/errors.ts';

/** How long deliveries left by the last process wait before their first send after a start. */
const RESUME_GRACE_MS = 1000;

/** A delivery that used its attempts or was refused for good: what the failure book records. */
export interface DeliveryFailure {
  kind: 'delivery';
  runId: string;
  hook?: string;
  agentId: string;
  channel: string;
  to?: string;
  /** Tries made, the first included. */
  attempts: number;
  lastError: string;
  /** The reply, for a replay. */
  text: string;
  firstAt: string;
  lastAt: string;
}

export interface ChannelDeliveriesOptions {
  outbox: Outbox;
  /** The state file of the deliveries not settled; undefined: memory only (nothing resumes). */
  stateFile: string | undefined;
  logger: Logger;
  metrics: GatewayMetrics;
  channels: ResolvedChannels;
  /** hooks.retry as the config has it now. */
  retry: () => Readonly<RetryPolicy>;
  /** Counts a scheduled retry (hookgate_retries_total{kind="delivery"}). */
  retried: () => void;
  /** A dead letter; never throws back here. */
  onFailed: (failure: DeliveryFailure) => void | Promise<void>;
}

interface Job {
  /** The delivery in its latest state, as the outbox has it. */
  entry: UnsettledDelivery;
  /** Settles the receipt of the process that accepted it (none for a resumed one). */
  tell?: (fact: DeliveryFact) => void;
}

export class ChannelDeliveries {
  readonly #opts: ChannelDeliveriesOptions;
  readonly #outbox: Outbox;
  readonly #state: StateFile<UnsettledDelivery>;
  readonly #logger: Logger;
  readonly #metrics: GatewayMetrics;
  #senders: ReadonlyMap<string, Channel>;
  #redactor: Redactor;
  /** Channels a reload replaced while sends still waited on their pacer: they drain on the old sender. */
  readonly #retired = new Set<Channel>();
  readonly #retries: DueQueue<Job>;
  readonly #sending = new Set<Promise<void>>();
  /** Deliveries this process accepted and has not settled: a resume leaves them alone. */
  readonly #mine = new Set<string>();
  readonly #stop = new AbortController();
  #closing = false;

  /** Opens the state file; `resume()` then takes up what it holds. */
  static async open(opts: ChannelDeliveriesOptions): Promise<ChannelDeliveries> {
    return new ChannelDeliveries(opts, await StateFile.open(opts.stateFile, isUnsettledDelivery, opts.logger));
  }

  private constructor(opts: ChannelDeliveriesOptions, state: StateFile<UnsettledDelivery>) {
    this.#opts = opts;
    this.#outbox = opts.outbox;
    this.#state = state;
    this.#logger = opts.logger;
    this.#metrics = opts.metrics;
    this.#senders = opts.channels.senders;
    this.#redactor = opts.channels.redactor;
    this.#retries = new DueQueue<Job>((job) => this.#attempt(job));
  }

  /** Resolves once the delivery is in the outbox (pending or recorded); the send goes on after. */
  async deliver(d: Delivery): Promise<DeliveryReceipt> {
    const channel = this.#senders.get(d.channel);
    const base = {
      channel: d.channel,
      ...(d.to !== undefined ? { to: d.to } : {}),
      text: d.text,
      runId: d.runId,
      agentId: d.agentId,
    };
    if (!channel) {
      await this.#outbox.append({ ...base, status: 'recorded' });
      this.#metrics.delivery(d.channel, 'recorded');
      return { outcome: Promise.resolve(factOf(base, 'recorded')) };
    }
    const id = randomUUID();
    const entry: UnsettledDelivery = { id, ...base, at: new Date().toISOString(), status: 'pending' };
    this.#mine.add(id);
    // The work first: a crash between the two writes sends a delivery the outbox lacks, never loses one.
    await this.#state.put(id, { ...entry });
    await this.#outbox.append(entry);
    let tell: Job['tell'];
    const outcome = new Promise<DeliveryFact>((resolve) => (tell = resolve));
    // Accepted while stopping: it stays pending, for the next start to send.
    if (!this.#closing) this.#attempt({ entry, tell });
    return { outcome };
  }

  /** Takes up what the last process left: pending ones are sent again now, retrying ones keep their time. */
  resume(): number {
    const open = [...this.#state.records.values()].filter((d) => !this.#mine.has(d.id));
    // The last process's sends are unknown to the new pacers: waiting out the one-second windows most
    // platforms count in keeps a quick restart from earning a 429 (a longer window's is waited out).
    const notBefore = Date.now() + RESUME_GRACE_MS;
    for (const entry of open) {
      const due = entry.status === 'retrying' ? Date.parse(entry.nextAttemptAt ?? '') || 0 : 0;
      this.#retries.add(entry.id, Math.max(due, notBefore), { entry: { ...entry } });
    }
    return open.length;
  }

  /**
   * A reload's channels: a channel whose block and secrets are unchanged keeps its sender and pacer
   * (the pacing must see every send to a platform); a changed one gets the new sender for its next
   * attempt, while sends already under way finish on the old one. Returns the names that changed.
   */
  useChannels(next: ResolvedChannels): string[] {
    const merged = new Map<string, Channel>();
    const changed: string[] = [];
    for (const [name, fresh] of next.senders) {
      const old = this.#senders.get(name);
      const keep = old !== undefined && old.fingerprint === fresh.fingerprint;
      merged.set(name, keep ? old : fresh);
      if (!keep) changed.push(name);
    }
    for (const [name, old] of this.#senders) {
      if (merged.get(name) === old) continue;
      if (!next.senders.has(name)) changed.push(name);
      this.#retired.add(old);
    }
    for (const old of this.#retired) if (old.waiting === 0) this.#retired.delete(old);
    this.#senders = merged;
    this.#redactor = next.redactor;
    return changed;
  }

  /** Deliveries waiting for their outcome: pending or retrying. */
  get pending(): number {
    return this.#state.size;
  }

  /**
   * Stops taking turns and retries; sends under way get `graceMs` to finish, then are cut. What is
   * not settled stays pending or retrying (with the parts already sent), for the next start.
   */
  async close(graceMs: number): Promise<void> {
    this.#closing = true;
    this.#retries.close();
    for (const channel of [...this.#senders.values(), ...this.#retired]) channel.close();
    const all = Promise.all([...this.#sending]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    this.#stop.abort();
    await all;
    await this.#state.close();
  }

  #attempt(job: Job): void {
    if (this.#closing) return;
    const { entry } = job;
    const before = entry.messageIds ?? [];
    const channel = this.#senders.get(entry.channel);
    const result: Promise<DeliveryResult> = channel
      ? channel.deliver(entry.to, entry.text, {
          signal: this.#stop.signal,
          fromPart: entry.partsSent ?? 0,
          onPart: (partsSent, ids) => this.#progress(job, partsSent, [...before, ...ids]),
        })
      : Promise.resolve(noLongerSends(entry.channel));
    const sending = result
      .then((r) => this.#afterAttempt(job, r, before))
      .catch((err: unknown) => {
        const reason = this.#redactor.clean(errorMessage(err));
        this.#logger.error('delivery could not be recorded', { channel: entry.channel, deliveryId: entry.id, reason });
      })
      .finally(() => this.#sending.delete(sending));
    this.#sending.add(sending);
  }

  /** A part of a split reply went out: noted, so a crash does not send it again. */
  #progress(job: Job, partsSent: number, messageIds: string[]): void {
    Object.assign(job.entry, { partsSent, messageIds });
    this.#keep(job.entry).catch((err: unknown) => {
      this.#logger.error('delivery progress could not be recorded', {
        deliveryId: job.entry.id,
        reason: errorMessage(err),
      });
    });
  }

  async #afterAttempt(job: Job, result: DeliveryResult, before: string[]): Promise<void> {
    const { entry } = job;
    const messageIds = [...before, ...result.messageIds];
    if (result.status === 'sent') {
      const attempts = entry.attempts?.length ? { attempts: entry.attempts } : {};
      await this.#outbox.settle(entry.id, { status: 'sent', messageIds, ...attempts });
      await this.#state.remove(entry.id);
      this.#metrics.delivery(entry.channel, 'sent', secondsSince(entry.at));
      this.#mine.delete(entry.id);
      job.tell?.(factOf(entry, 'sent'));
      return;
    }
    if (result.sentParts > (entry.partsSent ?? 0)) Object.assign(entry, { partsSent: result.sentParts, messageIds });
    if (this.#closing && result.retryable) {
      // Cut by the stop: the state stays as it was, with the parts sent since.
      await this.#keep(entry);
      return;
    }
    const now = Date.now();
    entry.attempts = [...(entry.attempts ?? []), { at: new Date(now).toISOString(), error: result.description }];
    const policy = this.#opts.retry();
    if (result.retryable && mayRetry(policy, entry.attempts.length)) {
      const dueAt = now + retryDelayMs(policy, entry.attempts.length, result.waitMs);
      Object.assign(entry, { status: 'retrying', nextAttemptAt: new Date(dueAt).toISOString() });
      await this.#keep(entry);
      this.#metrics.delivery(entry.channel, 'retrying');
      this.#opts.retried();
      this.#logger.info('delivery will be tried again', {
        channel: entry.channel,
        runId: entry.runId,
        deliveryId: entry.id,
        attempt: entry.attempts.length,
        nextAttemptAt: entry.nextAttemptAt,
        reason: result.description,
      });
      this.#retries.add(entry.id, dueAt, job);
      return;
    }
    await this.#fail(job, result);
  }

  /** An unsettled delivery's new state: in the state file (for a start) and the outbox (for people). */
  async #keep(entry: UnsettledDelivery): Promise<void> {
    await Promise.all([this.#state.put(entry.id, { ...entry }), this.#outbox.settle(entry.id, stateOf(entry))]);
  }

  async #fail(job: Job, result: Extract<DeliveryResult, { status: 'failed' }>): Promise<void> {
    const { entry } = job;
    const attempts = entry.attempts ?? [];
    const { nextAttemptAt: _next, ...rest } = stateOf(entry);
    await this.#outbox.settle(entry.id, { ...rest, status: 'failed', error: result.description });
    await this.#state.remove(entry.id);
    this.#metrics.delivery(entry.channel, 'failed', secondsSince(entry.at));
    this.#mine.delete(entry.id);
    this.#logger.warn('delivery failed', {
      channel: entry.channel,
      runId: entry.runId,
      deliveryId: entry.id,
      attempts: attempts.length,
      partsSent: result.sentParts,
      parts: result.parts,
      reason: result.description,
    });
    job.tell?.(factOf(entry, 'failed'));
    try {
      await this.#opts.onFailed({
        kind: 'delivery',
        runId: entry.runId,
        agentId: entry.agentId,
        channel: entry.channel,
        ...(entry.to !== undefined ? { to: entry.to } : {}),
        attempts: attempts.length,
        lastError: result.description,
        text: entry.text,
        firstAt: entry.at,
        lastAt: attempts.at(-1)?.at ?? new Date().toISOString(),
      });
    } catch (err) {
      this.#logger.error('a failed delivery could not be reported', {
        deliveryId: entry.id,
        reason: errorMessage(err),
      });
    }
  }
}

/** The state fields of an entry, as a status line carries them. */
function stateOf(entry: UnsettledDelivery): DeliveryState {
  return {
    status: entry.status,
    ...(entry.messageIds?.length ? { messageIds: entry.messageIds } : {}),
    ...(entry.attempts?.length ? { attempts: entry.attempts } : {}),
    ...(entry.nextAttemptAt !== undefined ? { nextAttemptAt: entry.nextAttemptAt } : {}),
    ...(entry.partsSent ? { partsSent: entry.partsSent } : {}),
  };
}

function factOf(d: { channel: string; to?: string }, status: DeliveryFact['status']): DeliveryFact {
  return { channel: d.channel as ChannelName, ...(d.to !== undefined ? { to: d.to } : {}), status };
}

function secondsSince(iso: string): number | undefined {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? undefined : Math.max(0, (Date.now() - at) / 1000);
}

/** A delivery whose channel lost its credentials (a reload, or a start with another config). */
function noLongerSends(channel: string): DeliveryResult {
  return {
    status: 'failed',
    retryable: false,
    description: `channels.${channel} no longer has credentials: nothing was sent`,
    messageIds: [],
    parts: 0,
    sentParts: 0,
  };
}
