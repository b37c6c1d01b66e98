// The failure book (dead letters): agent runs that ended in error or timeout after their last try, and
// replies the reply queue gave up on (replies/). Each failure keeps what is needed to replay it (the resolved action:
// the run as it was accepted, or the delivery's text and route; never the request's payload), and is
// open until it is dismissed or replayed. Kept in <stateDir>/failures.jsonl, bounded by count and
// bytes, shared fairly between hooks (the endpoint or mapping id that accepted the run, never the
// name a sender gave it): past a bound, the hook holding the most loses its dismissed and replayed
// failures first, then its oldest open ones, so one hook's flood never evicts another's.
import type { AcceptedRun, ChannelName, GatewayHost } from '../host.ts';
import { refuse } from '../errors.ts';
import { StateFile } from '../util/state-file.ts';
import { cachedRedactor } from '../util/secret-redactor.ts';
import { failureReason } from './failure-reason.ts';
import { FailureEvents } from './failure-events.ts';
import { newFailureId, type RunFinal } from '../runs/run-final.ts';
import type { ReplyDeadLetter } from '../replies/reply-queue.ts';

export type FailureKind = 'run' | 'delivery';
export type FailureState = 'open' | 'replayed' | 'dismissed';

/** A run as accepted, less its id: what a replay runs again. */
export type RunAction = Omit<AcceptedRun, 'runId'>;
export interface DeliveryAction {
  /** The endpoint or mapping id whose run produced the reply, when known. */
  hookId?: string;
  agentId: string;
  channel: ChannelName;
  to?: string;
  text: string;
}
export type StoredAction = ({ kind: 'run' } & RunAction) | ({ kind: 'delivery' } & DeliveryAction);

/** A failure as the admin API shows it. */
export interface Failure {
  id: string;
  kind: FailureKind;
  runId: string;
  /** The hook request that accepted the run, when known (`hookgate requests` shows it). */
  requestId?: string;
  hook: string;
  agentId: string;
  channel?: string;
  to?: string;
  attempts: number;
  lastError: string;
  firstAt: string;
  lastAt: string;
  state: FailureState;
  replayedBy?: string;
}

interface StoredFailure extends Failure {
  /** Order of recording: the list's order and its cursor. */
  seq: number;
  action: StoredAction;
}

/** A delivery the host gave up on (the standalone's channel deliveries report theirs here). */
export interface FailurePage {
  failures: Failure[];
  before?: string;
}

export interface FailureQuery {
  limit: number;
  /** Only failures recorded before this cursor (a page's `before`). */
  before?: number;
  state: 'open' | 'all';
  hook?: string;
}

export const MAX_FAILURES = 10_000;
/** Text kept across all failures (prompts and delivery texts), roughly in characters. */
export const MAX_FAILURE_TEXT = 64 * 1024 * 1024;
/** At open, a file holding more is trimmed oldest first; a line weighs more than its text. */
const KEEP_AT_OPEN = { records: MAX_FAILURES, bytes: 4 * MAX_FAILURE_TEXT };
/** What a record costs besides its text. */
const RECORD_OVERHEAD = 512;

const FAILURE_ID = /^fail_[0-9a-f]{16}$/;

export function isFailureId(id: string): boolean {
  return FAILURE_ID.test(id);
}

function isStoredFailure(value: unknown): value is StoredFailure {
  const f = value as Partial<StoredFailure> | null;
  return (
    typeof f === 'object' &&
    f !== null &&
    typeof f.id === 'string' &&
    typeof f.seq === 'number' &&
    (f.kind === 'run' || f.kind === 'delivery') &&
    typeof f.runId === 'string' &&
    typeof f.hook === 'string' &&
    typeof f.agentId === 'string' &&
    (f.state === 'open' || f.state === 'replayed' || f.state === 'dismissed') &&
    typeof f.action === 'object' &&
    f.action !== null &&
    f.action.kind === f.kind
  );
}

function view({ seq: _seq, action: _action, ...failure }: StoredFailure): Failure {
  return failure;
}

function sizeOf(f: StoredFailure): number {
  return (f.action.kind === 'run' ? f.action.prompt.length : f.action.text.length) + RECORD_OVERHEAD;
}

/** Whose share a failure counts in: the hook that accepted its run, else (older records) its name. */
function shareOf(f: StoredFailure): string {
  return f.action.hookId ?? f.hook;
}

/** One hook's part of the book: its size, and its failures in the order they go when it must shrink. */
interface Share {
  count: number;
  text: number;
  /** Dismissed and replayed, in the order they closed. */
  closed: Set<string>;
  /** Open, oldest first. */
  open: Set<string>;
}

/** Open failures of the same thing are one failure: a delivery reported again after a restart. */
function sameThing(f: Pick<StoredFailure, 'kind' | 'runId' | 'channel' | 'to'>): string {
  return `${f.kind}\0${f.runId}\0${f.channel ?? ''}\0${f.to ?? ''}`;
}

export class FailureBook {
  readonly #file: StateFile<StoredFailure>;
  readonly #events: FailureEvents;
  readonly #logger: GatewayHost['logger'];
  readonly #tally: (kind: FailureKind) => void;
  readonly #redact: (text: string) => string;
  /** Each hook's share of the bounds (shareOf). */
  readonly #shares = new Map<string, Share>();
  readonly #openByThing = new Map<string, string>();
  readonly #recorded: ((failure: Failure, action: StoredAction) => void)[] = [];
  #text = 0;
  #seq = 0;

  private constructor(
    file: StateFile<StoredFailure>,
    events: FailureEvents,
    host: Pick<GatewayHost, 'logger' | 'secrets'>,
    counted: (kind: FailureKind) => void,
  ) {
    this.#file = file;
    this.#events = events;
    this.#logger = host.logger;
    this.#tally = counted;
    this.#redact = cachedRedactor(() => host.secrets?.() ?? []);
    for (const f of file.records.values()) {
      this.#text += sizeOf(f);
      this.#seq = Math.max(this.#seq, f.seq);
      this.#counted(f);
      if (f.state === 'open') this.#openByThing.set(sameThing(f), f.id);
    }
  }

  /** `path` undefined: memory only. `counted` is told each failure recorded (metrics). */
  static async open(
    path: string | undefined,
    host: Pick<GatewayHost, 'sessions' | 'logger' | 'secrets' | 'fileSync'>,
    counted: (kind: FailureKind) => void,
    events = new FailureEvents(host),
  ): Promise<FailureBook> {
    return new FailureBook(
      await StateFile.open(path, isStoredFailure, host.logger, { keepAtMost: KEEP_AT_OPEN, sync: host.fileSync }),
      events,
      host,
      counted,
    );
  }

  /**
   * A run's final outcome: an error or a timeout is a failure, kept under the id its summary named.
   * The summary was the main session's notice: no event of the book's beside it.
   */
  followRun(final: RunFinal): void {
    if (final.status === 'ok') return;
    const { run, attempts } = final;
    const { runId: _runId, ...action } = run;
    void this.#record(
      {
        ...(final.failureId !== undefined ? { id: final.failureId } : {}),
        kind: 'run',
        runId: run.runId,
        ...(run.requestId !== undefined ? { requestId: run.requestId } : {}),
        hook: run.name,
        agentId: run.agentId,
        attempts: Math.max(1, attempts.length),
        lastError: final.error ?? final.status,
        firstAt: attempts[0]?.at,
        lastAt: attempts.at(-1)?.at,
      },
      { kind: 'run', ...action },
    ).catch(() => {});
  }

  /** A reply the queue gave up on; resolves once it is on disk. */
  record(input: ReplyDeadLetter): Promise<void> {
    const { agentId, channel, to, text, hookId } = input;
    return this.#record(
      {
        kind: 'delivery',
        runId: input.runId,
        hook: input.hook,
        agentId,
        channel,
        to,
        attempts: Math.max(1, input.attempts),
        lastError: input.lastError,
        firstAt: input.firstAt,
        lastAt: input.lastAt,
      },
      {
        kind: 'delivery',
        ...(hookId !== undefined ? { hookId } : {}),
        agentId,
        channel,
        ...(to !== undefined ? { to } : {}),
        text,
      },
    );
  }

  /** Told each failure recorded (or reported again) here: the shared book (hooks.queue) pushes it. */
  onRecord(listener: (failure: Failure, action: StoredAction) => void): void {
    this.#recorded.push(listener);
  }

  get(id: string): Failure | undefined {
    const f = this.#file.get(id);
    return f && view(f);
  }

  /** The action a replay runs; undefined for an unknown id. */
  actionOf(id: string): StoredAction | undefined {
    return this.#file.get(id)?.action;
  }

  /** The failure of a run (its open one, else its newest), for a replay asked by run id. */
  latestOfRun(runId: string): Failure | undefined {
    const open = this.#openByThing.get(sameThing({ kind: 'run', runId }));
    if (open !== undefined) return this.get(open);
    let found: StoredFailure | undefined;
    for (const f of this.#file.records.values()) if (f.runId === runId && f.kind === 'run') found = f;
    return found && view(found);
  }

  /** Newest first, `limit` of them, and the cursor of the next page when there is one. */
  page(q: FailureQuery): FailurePage {
    const all = [...this.#file.records.values()];
    const failures: Failure[] = [];
    let lastSeq = 0;
    for (let i = all.length - 1; i >= 0; i--) {
      const f = all[i]!;
      if (q.before !== undefined && f.seq >= q.before) continue;
      if (q.state === 'open' && f.state !== 'open') continue;
      if (q.hook !== undefined && f.hook !== q.hook) continue;
      if (failures.length === q.limit) return { failures, before: String(lastSeq) };
      failures.push(view(f));
      lastSeq = f.seq;
    }
    return { failures };
  }

  /** Open failures recorded (last tried) at or after `sinceMs`, of one hook if named; oldest first. */
  openSince(sinceMs: number, hook?: string): Failure[] {
    const out: Failure[] = [];
    for (const f of this.#file.records.values()) {
      if (f.state !== 'open' || Date.parse(f.lastAt) < sinceMs) continue;
      if (hook === undefined || f.hook === hook) out.push(view(f));
    }
    return out;
  }

  /**
   * Open failures by the hook that accepted their run (`wake`, `agent`, a mapping's id), never by the
   * `name` a sender gave the run; a record older than the hook id counts under its name.
   */
  openByHook(): Map<string, number> {
    const out = new Map<string, number>();
    for (const f of this.#file.records.values()) {
      if (f.state !== 'open') continue;
      const hook = shareOf(f);
      out.set(hook, (out.get(hook) ?? 0) + 1);
    }
    return out;
  }

  /** Throws 404 for an unknown id; a failure already closed stays as it is. */
  async dismiss(id: string): Promise<Failure> {
    const f = this.#file.get(id);
    if (!f) throw refuse.notFound('no such failure');
    if (f.state !== 'open') return view(f);
    return view(await this.#close({ ...f, state: 'dismissed' }));
  }

  /** The failure was replayed as run `by`. */
  async replayed(id: string, by: string): Promise<void> {
    const f = this.#file.get(id);
    if (f) await this.#close({ ...f, state: 'replayed', replayedBy: by });
  }

  async close(): Promise<void> {
    this.#events.close();
    await this.#file.close();
  }

  async #close(f: StoredFailure): Promise<StoredFailure> {
    this.#openByThing.delete(sameThing(f));
    const share = this.#shares.get(shareOf(f));
    share?.open.delete(f.id);
    share?.closed.delete(f.id);
    share?.closed.add(f.id);
    await this.#file.put(f.id, f);
    return f;
  }

  /** A failure kept (at open, or newly recorded) counts in its hook's share. */
  #counted(f: StoredFailure): void {
    const key = shareOf(f);
    let share = this.#shares.get(key);
    if (!share) this.#shares.set(key, (share = { count: 0, text: 0, closed: new Set(), open: new Set() }));
    share.count++;
    share.text += sizeOf(f);
    (f.state === 'open' ? share.open : share.closed).add(f.id);
  }

  async #record(
    facts: Omit<Failure, 'id' | 'state' | 'firstAt' | 'lastAt'> & { id?: string; firstAt?: string; lastAt?: string },
    action: StoredAction,
  ): Promise<void> {
    const now = new Date().toISOString();
    // Known credentials in any form first; then what only looks like one (failure-reason.ts).
    const lastError = failureReason(this.#redact(facts.lastError));
    const known = this.#file.get(this.#openByThing.get(sameThing(facts)) ?? '');
    const failure: StoredFailure = {
      id: known?.id ?? facts.id ?? newFailureId(),
      seq: known?.seq ?? ++this.#seq,
      kind: facts.kind,
      runId: facts.runId,
      ...(facts.requestId !== undefined ? { requestId: facts.requestId } : {}),
      hook: facts.hook,
      agentId: facts.agentId,
      ...(facts.channel !== undefined ? { channel: facts.channel } : {}),
      ...(facts.to !== undefined ? { to: facts.to } : {}),
      attempts: facts.attempts,
      lastError,
      firstAt: known?.firstAt ?? facts.firstAt ?? now,
      lastAt: facts.lastAt ?? now,
      state: 'open',
      action,
    };
    if (known) {
      this.#text -= sizeOf(known);
      const share = this.#shares.get(shareOf(known));
      if (share) share.text += sizeOf(failure) - sizeOf(known);
    } else this.#counted(failure);
    this.#text += sizeOf(failure);
    this.#openByThing.set(sameThing(failure), failure.id);
    const written = this.#file.put(failure.id, failure);
    for (const listener of this.#recorded) listener(view(failure), failure.action);
    this.#evict();
    if (known) return written;
    this.#tally(failure.kind);
    // A run's summary was its notice. A dead letter has no summary after it: the main session hears
    // of it once it is on disk, and also when the write failed (the state file logged it): the
    // failure stays listed until a restart.
    if (failure.kind === 'run') return written;
    try {
      await written;
    } finally {
      this.#events.notify({
        hook: failure.hook,
        agentId: failure.agentId,
        runId: failure.runId,
        what: `the delivery to ${failure.channel}`,
        attempts: failure.attempts,
        reason: lastError,
      });
    }
  }

  /**
   * Over a bound, the hook holding the most (text when the text is over, else failures) gives up its
   * dismissed and replayed failures first, then its oldest open ones; the others keep theirs.
   */
  #evict(): void {
    let dropped = 0;
    for (;;) {
      const overText = this.#text > MAX_FAILURE_TEXT && this.#file.size > 1;
      if (this.#file.size <= MAX_FAILURES && !overText) break;
      const [key, share] = this.#largestShare(overText);
      const id = share.closed.values().next().value ?? share.open.values().next().value!;
      const f = this.#file.get(id)!;
      if (f.state === 'open') {
        dropped++;
        this.#openByThing.delete(sameThing(f));
      }
      share.closed.delete(id);
      share.open.delete(id);
      share.count--;
      share.text -= sizeOf(f);
      if (share.count === 0) this.#shares.delete(key);
      this.#text -= sizeOf(f);
      void this.#file.remove(id).catch(() => {});
    }
    if (dropped) this.#logger.warn('open failures dropped: the failure book is full', { count: dropped });
  }

  #largestShare(byText: boolean): [string, Share] {
    let largest: [string, Share] | undefined;
    for (const entry of this.#shares) {
      const [, share] = entry;
      if (!largest || (byText ? share.text > largest[1].text : share.count > largest[1].count)) largest = entry;
    }
    return largest!;
  }
}
