// The hook runs an OpenClaw process saw end, kept in the plugin's state dir, so the admin API's runs
// list (the core's run book) shows them again after OpenClaw restarts. OpenClaw keeps transcripts,
// not the plugin's view of a run, and the acknowledgement journal forgets a run once it ended; so each
// run's end is one record here (status, hook, request, tries; never its prompt or reply), written
// after the fact (nothing waits for it) and bounded to the run book's size, the oldest end first.
import type { Logger, PastRun, RunRecord } from '../../host.ts';
import { errorMessage } from '../../util/errors.ts';
import { StateFile } from '../../util/state-file.ts';

const FINAL: ReadonlySet<string> = new Set(['ok', 'error', 'timeout']);
/** Runs kept: as many as the run book lists (plugin/runs/run-book.ts). */
export const RUN_HISTORY_SIZE = 10_000;

interface Accepted {
  at: string;
  hookId?: string;
  requestId?: string;
}

function isPastRun(v: unknown): v is PastRun {
  if (v === null || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r.runId === 'string' &&
    typeof r.name === 'string' &&
    typeof r.status === 'string' &&
    FINAL.has(r.status) &&
    typeof r.agentId === 'string' &&
    typeof r.sessionKey === 'string' &&
    typeof r.at === 'string' &&
    typeof r.updatedAt === 'string'
  );
}

export class RunHistory {
  #file: StateFile<PastRun> | undefined;
  #logger: Logger | undefined;
  /** What a run's acceptance told, until its end is written. */
  readonly #accepted = new Map<string, Accepted>();
  /** The runs found at open, oldest accepted first, until the core takes them. */
  #past: PastRun[] = [];

  constructor(readonly size = RUN_HISTORY_SIZE) {}

  /** Reads the runs the last process saw end. */
  async open(file: string, logger: Logger): Promise<void> {
    this.#logger = logger;
    this.#file = await StateFile.open(file, isPastRun, logger);
    this.#past = [...this.#file.records.values()].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    // A smaller bound than the file was written with: the oldest ends go.
    for (const runId of [...this.#file.records.keys()].slice(0, Math.max(0, this.#file.size - this.size)))
      this.#forget(runId);
  }

  /** The runs of the last process, oldest accepted first; handed over once. */
  take(): PastRun[] {
    const past = this.#past;
    this.#past = [];
    return past;
  }

  /** Every status change of a run: its acceptance is remembered, its end written. */
  note(record: Readonly<RunRecord>): void {
    if (record.status === 'queued' && !this.#accepted.has(record.runId)) {
      const accepted: Accepted = { at: new Date().toISOString() };
      if (record.run?.hookId !== undefined) accepted.hookId = record.run.hookId;
      if (record.run?.requestId !== undefined) accepted.requestId = record.run.requestId;
      this.#accepted.set(record.runId, accepted);
      return;
    }
    if (!FINAL.has(record.status)) return;
    const file = this.#file;
    const accepted = this.#accepted.get(record.runId);
    this.#accepted.delete(record.runId);
    if (!file) return;
    const now = new Date().toISOString();
    const past: PastRun = {
      runId: record.runId,
      name: record.name,
      status: record.status,
      agentId: record.agentId,
      sessionKey: record.sessionKey,
      // A run accepted by the last process and ended by this one: its acceptance time is unknown.
      at: accepted?.at ?? now,
      updatedAt: now,
    };
    if (accepted?.hookId !== undefined) past.hookId = accepted.hookId;
    if (accepted?.requestId !== undefined) past.requestId = accepted.requestId;
    if (record.attempts !== undefined) past.attempts = record.attempts;
    if (record.error !== undefined) past.error = record.error;
    file.put(record.runId, past).catch((err: unknown) => {
      this.#logger?.warn('a run could not be kept for the runs list', { reason: errorMessage(err) });
    });
    if (file.size > this.size) this.#forget(file.records.keys().next().value!);
  }

  close(): Promise<void> {
    return this.#file?.close() ?? Promise.resolve();
  }

  #forget(runId: string): void {
    this.#file!.remove(runId).catch((err: unknown) => {
      this.#logger?.warn('a run could not be dropped from the runs list', { reason: errorMessage(err) });
    });
  }
}
