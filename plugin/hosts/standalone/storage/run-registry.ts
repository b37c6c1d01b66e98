// Hook runs as the admin API shows them. The most recent runs are kept in memory with their latest
// status; the changes a restart needs (accepted, finished) are written as "run" lines into the run's
// own session file, beside its prompt and reply, and the reply is stored once. On start the registry
// is rebuilt from the lines in the tail of each session, and the runs that were accepted but never
// finished are found. A run no longer in memory is read back from its session file (found through
// the run index, run-index.ts) for as long as the file still holds it. Replies are what can be large:
// memory keeps the newest up to REPLY_BYTES_IN_MEMORY, and an older reply (or one restored on start)
// is read back from its session file when the run is asked for. The runs restored on start are also
// handed to the core once (history()), so the admin API's runs list survives a restart.
import type { IdempotencyRecord, PastRun, RunAttempt, RunRecord, RunStatus } from '../../../host.ts';
import { isoNow } from '../io/iso-now.ts';

/** A run's status line in its session file. */
export interface RunLine {
  kind: 'run';
  runId: string;
  status: RunStatus;
  name: string;
  agentId: string;
  error?: string;
  at: string;
  /** On an acceptance: the idempotency key of the request, kept in the same line. */
  idem?: IdempotencyRecord;
  /** Once the run was retried: every try so far. */
  attempts?: RunAttempt[];
  /** With status "retrying": when the next try is due (ISO time). */
  next?: string;
  /** On an acceptance: the hook that accepted it and the request that started it (the runs list). */
  hook?: string;
  req?: string;
}

/** Adds a line to a session's file: `record` settles once it is written; `queue` has nobody waiting. */
export interface RunLineWriter {
  record(sessionKey: string, line: RunLine): Promise<void>;
  queue(sessionKey: string, line: RunLine): void;
}

const KEEP_IN_MEMORY = 10_000;
/** Replies kept in memory, in UTF-8 bytes: 10,000 runs of 250 KB replies once held 2.5 GB. */
export const REPLY_BYTES_IN_MEMORY = 32 * 1024 * 1024;
const FINAL: ReadonlySet<string> = new Set(['ok', 'error', 'timeout']);
const STATUSES: ReadonlySet<string> = new Set(['queued', 'running', 'retrying', 'ok', 'error', 'timeout']);

interface RestoredRun extends RunRecord {
  /** When it was accepted, to keep the most recent runs across session files. */
  acceptedAt: string;
  /** When its newest line was written. */
  updatedAt: string;
  hookId?: string;
  requestId?: string;
  /** Its session file holds a reply, read back when the run is asked for. */
  replied?: boolean;
}

function isRunLine(record: object): record is RunLine {
  const r = record as Partial<RunLine>;
  return (
    r.kind === 'run' &&
    typeof r.runId === 'string' &&
    typeof r.status === 'string' &&
    STATUSES.has(r.status) &&
    typeof r.name === 'string' &&
    typeof r.agentId === 'string' &&
    typeof r.at === 'string'
  );
}

/** A run's record as its status line tells it. */
function runOf(line: RunLine, sessionKey: string): RunRecord {
  const run: RunRecord = { runId: line.runId, name: line.name, status: line.status, agentId: line.agentId, sessionKey };
  if (typeof line.error === 'string') run.error = line.error;
  if (Array.isArray(line.attempts)) run.attempts = line.attempts;
  if (typeof line.next === 'string') run.nextAttemptAt = line.next;
  return run;
}

/** Reads a run back from disk; undefined when no file holds it any more. */
export type RunLookup = (runId: string) => Promise<RunRecord | undefined>;

/** Reads a session newest line first, parsing only lines holding `needle`, until `visit` returns false. */
export type SessionScan = (sessionKey: string, needle: Buffer, visit: (record: object) => boolean) => Promise<void>;

/** A run as its session file tells it: the newest status line, and the reply written for it. */
export async function readRun(scan: SessionScan, sessionKey: string, runId: string): Promise<RunRecord | undefined> {
  let latest: RunLine | undefined;
  let reply: string | undefined;
  await scan(sessionKey, Buffer.from(`"runId":${JSON.stringify(runId)}`), (record) => {
    if (isRunLine(record)) {
      if (record.runId !== runId) return true;
      latest ??= record;
      // The acceptance is the run's first line: nothing older belongs to it.
      return record.status !== 'queued';
    }
    const entry = record as { kind?: unknown; runId?: unknown; text?: unknown; error?: unknown };
    if (entry.kind === 'reply' && entry.runId === runId && typeof entry.text === 'string' && entry.error === undefined)
      reply ??= entry.text;
    return true;
  });
  if (!latest) return undefined;
  const run = runOf(latest, sessionKey);
  if (reply !== undefined) run.reply = reply;
  return run;
}

function pastRun(
  run: RunRecord,
  at: string,
  updatedAt: string,
  hookId: string | undefined,
  requestId: string | undefined,
): PastRun {
  const past: PastRun = {
    runId: run.runId,
    name: run.name,
    status: run.status,
    agentId: run.agentId,
    sessionKey: run.sessionKey,
    at,
    updatedAt,
  };
  if (hookId !== undefined) past.hookId = hookId;
  if (requestId !== undefined) past.requestId = requestId;
  if (run.attempts !== undefined) past.attempts = run.attempts;
  if (run.nextAttemptAt !== undefined) past.nextAttemptAt = run.nextAttemptAt;
  if (run.error !== undefined) past.error = run.error;
  return past;
}

export class RunRegistry {
  private readonly runs = new Map<string, Readonly<RunRecord>>();
  /**
   * Run ids in the order they were first seen, in a ring: the slot of the next new run holds the
   * oldest, which is forgotten. Asking the Map for its first key instead walks past every entry
   * deleted since it last compacted, which made each update cost microseconds.
   */
  private readonly order: (string | undefined)[] = new Array(KEEP_IN_MEMORY);
  private next = 0;
  /** Runs read from the session files on start, until restored() sorts them. */
  private restoring = new Map<string, RestoredRun>();
  /** The runs restored on start, oldest accepted first, until the core takes them (history()). */
  private past: PastRun[] = [];
  /** Sizes of the replies kept in memory, and their run ids oldest first (with a moving head). */
  private readonly replyBytesOf = new Map<string, number>();
  private replyOrder: string[] = [];
  private replyHead = 0;
  private replyBytes = 0;
  /** Runs kept in memory whose reply is left in their session file. */
  private readonly replyOnDisk = new Set<string>();

  constructor(
    private readonly writeLine: RunLineWriter,
    private readonly fromDisk?: RunLookup,
  ) {}

  /** For each session file read on start: takes its run lines, and the replies of those runs. */
  restore(sessionKey: string, records: readonly object[]): void {
    for (const record of records) {
      if (isRunLine(record)) {
        const before = this.restoring.get(record.runId);
        const run: RestoredRun = {
          ...runOf(record, sessionKey),
          acceptedAt: before?.acceptedAt ?? record.at,
          updatedAt: record.at,
        };
        if (before?.replied) run.replied = true;
        const hookId = before?.hookId ?? (typeof record.hook === 'string' ? record.hook : undefined);
        if (hookId !== undefined) run.hookId = hookId;
        const requestId = before?.requestId ?? (typeof record.req === 'string' ? record.req : undefined);
        if (requestId !== undefined) run.requestId = requestId;
        this.restoring.set(record.runId, run);
        continue;
      }
      // The reply entry the host wrote for the run (a failed turn writes an empty one with its error).
      const entry = record as { kind?: unknown; runId?: unknown; text?: unknown; error?: unknown };
      if (entry.kind !== 'reply' || typeof entry.runId !== 'string' || typeof entry.text !== 'string') continue;
      const run = this.restoring.get(entry.runId);
      if (run && entry.error === undefined) run.replied = true;
    }
    // Memory stays bounded whatever the number of runs on disk.
    if (this.restoring.size >= 2 * KEEP_IN_MEMORY) this.keepMostRecent();
  }

  /** Once every session file is read: remembers the most recent runs; returns those never finished. */
  restored(): RunRecord[] {
    this.keepMostRecent();
    const unfinished: RunRecord[] = [];
    this.past = [];
    for (const { acceptedAt, updatedAt, hookId, requestId, replied, ...run } of this.restoring.values()) {
      this.past.push(pastRun(run, acceptedAt, updatedAt, hookId, requestId));
      this.remember(run);
      if (replied) this.replyOnDisk.add(run.runId);
      if (!FINAL.has(run.status)) unfinished.push(run);
    }
    this.restoring = new Map();
    return unfinished;
  }

  /** The runs restored on start, oldest accepted first; handed over once. */
  history(): PastRun[] {
    const past = this.past;
    this.past = [];
    return past;
  }

  /**
   * Keeps the record as given: the run service hands over a fresh record for every change. For an
   * accepted run, settles once its line is in the file (the 202 waits for it); for any other, returns
   * nothing to wait for (the host contract's onRunUpdate).
   */
  update(record: Readonly<RunRecord>): void | Promise<void> {
    // The accepted run (its prompt among it) is not this registry's to keep: it recovers runs as interrupted.
    if (record.run) {
      const { run: _run, ...view } = record;
      this.remember(view);
    } else this.remember(record);
    // Recovery needs only "accepted" and "finished": running is kept in memory.
    if (record.status === 'running') return;
    const line: RunLine = {
      kind: 'run',
      runId: record.runId,
      status: record.status,
      name: record.name,
      agentId: record.agentId,
      at: isoNow(),
    };
    if (record.error !== undefined) line.error = record.error;
    if (record.idempotency !== undefined) line.idem = record.idempotency;
    if (record.run?.hookId !== undefined) line.hook = record.run.hookId;
    if (record.run?.requestId !== undefined) line.req = record.run.requestId;
    if (record.attempts !== undefined) line.attempts = [...record.attempts];
    if (record.nextAttemptAt !== undefined) line.next = record.nextAttemptAt;
    // A lost final line is not worth failing a finished run for; the session log logs write failures.
    // A retried run's are awaited: the core forgets its retry only once the final line is kept.
    if (record.status === 'queued' || record.attempts !== undefined)
      return this.writeLine.record(record.sessionKey, line);
    this.writeLine.queue(record.sessionKey, line);
  }

  /** A run kept in memory (without its reply when that was left on disk). */
  get(runId: string): RunRecord | undefined {
    return this.runs.get(runId);
  }

  /** A run from memory, else from its session file while that still holds it; so is a reply left there. */
  async find(runId: string): Promise<RunRecord | undefined> {
    const kept = this.runs.get(runId);
    if (kept && !this.replyOnDisk.has(runId)) return kept;
    return (await this.fromDisk?.(runId)) ?? kept;
  }

  /** Leaves at most KEEP_IN_MEMORY runs, oldest first: every unfinished one, then the most recently accepted. */
  private keepMostRecent(): void {
    const byAge = [...this.restoring.values()].sort((a, b) =>
      a.acceptedAt < b.acceptedAt ? -1 : a.acceptedAt > b.acceptedAt ? 1 : 0,
    );
    let excess = byAge.length - KEEP_IN_MEMORY;
    this.restoring = new Map();
    for (const run of byAge) {
      if (excess > 0 && FINAL.has(run.status)) excess--;
      else this.restoring.set(run.runId, run);
    }
  }

  private remember(r: Readonly<RunRecord>): void {
    if (!this.runs.has(r.runId)) {
      const oldest = this.order[this.next];
      if (oldest !== undefined) this.forget(oldest);
      this.order[this.next] = r.runId;
      this.next = (this.next + 1) % KEEP_IN_MEMORY;
    }
    this.runs.set(r.runId, r);
    if (r.reply !== undefined && !this.replyBytesOf.has(r.runId)) this.keepReply(r.runId, r.reply);
  }

  private forget(runId: string): void {
    this.runs.delete(runId);
    this.replyOnDisk.delete(runId);
    const bytes = this.replyBytesOf.get(runId);
    if (bytes === undefined) return;
    this.replyBytes -= bytes;
    this.replyBytesOf.delete(runId);
  }

  /** Counts a new reply; past the budget the oldest replies kept are left to their session files. */
  private keepReply(runId: string, reply: string): void {
    const bytes = Buffer.byteLength(reply, 'utf8');
    this.replyBytesOf.set(runId, bytes);
    this.replyOrder.push(runId);
    this.replyBytes += bytes;
    this.replyOnDisk.delete(runId);
    while (this.replyBytes > REPLY_BYTES_IN_MEMORY && this.replyHead < this.replyOrder.length) {
      const oldest = this.replyOrder[this.replyHead++]!;
      const size = this.replyBytesOf.get(oldest);
      // Forgotten since (left the ring): its bytes were given back then.
      if (size === undefined) continue;
      this.replyBytes -= size;
      this.replyBytesOf.delete(oldest);
      const { reply: _left, ...run } = this.runs.get(oldest)!;
      this.runs.set(oldest, run);
      this.replyOnDisk.add(oldest);
    }
    // Ids of runs forgotten since (left the ring oldest first) are dropped from the head, so the
    // order holds about as many ids as the ring does.
    while (this.replyHead < this.replyOrder.length && !this.replyBytesOf.has(this.replyOrder[this.replyHead]!))
      this.replyHead++;
    if (this.replyHead > 1024 && this.replyHead * 2 > this.replyOrder.length) {
      this.replyOrder = this.replyOrder.slice(this.replyHead);
      this.replyHead = 0;
    }
  }
}
