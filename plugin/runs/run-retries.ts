// Agent runs waiting for their next try (hooks.retry): each kept in <stateDir>/retries.jsonl with its
// tries so far and when the next is due, and scheduled on one DueQueue (one timer for them all). A
// try's start is written before the model is asked, so a restart can tell a run waiting for its next
// try (run it when due) from one whose try was cut off (the model may have acted: not tried again).
// With hooks.queue the wait is in Redis instead (share()): the file keeps only a marker that the run
// was handed over, so a start does not take it for one the stop interrupted, and a taker that takes
// a due try (taken()) keeps it here while it runs, its start written as before.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AcceptedRun, FileSyncPolicy, Logger, RunAttempt } from '../host.ts';
import { DueQueue } from '../retry/due-queue.ts';
import { spreadOverdue } from '../retry/overdue.ts';
import { StateFile } from '../util/state-file.ts';

export interface RunRetry {
  run: AcceptedRun;
  /** Every try so far, oldest first. */
  attempts: RunAttempt[];
  /** When the next try is due (ms since the epoch). */
  dueAt: number;
  /** The next try has started: a restart finds it cut off. */
  started?: true;
  /** Handed to the shared schedule (hooks.queue): another instance may carry out its next try. */
  shared?: true;
}

/** Where runs wait for their next try with hooks.queue (actions/queued-actions.ts puts them in Redis). */
export type SharedRetrySchedule = (retry: RunRetry) => Promise<void>;

const RUN_FIELDS = ['runId', 'name', 'agentId', 'sessionKey', 'prompt'] as const;

function isRunRetry(value: unknown): value is RunRetry {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Partial<RunRetry>;
  const run = r.run as Record<string, unknown> | undefined;
  return (
    typeof run === 'object' &&
    run !== null &&
    RUN_FIELDS.every((key) => typeof run[key] === 'string') &&
    typeof run.timeoutMs === 'number' &&
    Array.isArray(r.attempts) &&
    typeof r.dueAt === 'number'
  );
}

export class RunRetries {
  readonly #file: StateFile<RunRetry>;
  readonly #queue: DueQueue<AcceptedRun>;
  /** Runs in the file at start: this schedule finishes them, not the host's own restore. */
  readonly #tookBack: ReadonlySet<string>;
  #onDue: (run: AcceptedRun) => void = () => {};
  #shared: SharedRetrySchedule | undefined;

  private constructor(
    file: StateFile<RunRetry>,
    readonly durable: boolean,
  ) {
    this.#file = file;
    this.#tookBack = new Set(file.records.keys());
    this.#queue = new DueQueue((run) => this.#onDue(run));
  }

  /** Reads `<stateDir>/retries.jsonl`; without a stateDir the schedule lives in memory only. */
  static async open(stateDir: string | undefined, logger: Logger, sync?: FileSyncPolicy): Promise<RunRetries> {
    if (stateDir !== undefined) await mkdir(stateDir, { recursive: true, mode: 0o700 });
    const file = await StateFile.open(
      stateDir === undefined ? undefined : path.join(stateDir, 'retries.jsonl'),
      isRunRetry,
      logger,
      { sync },
    );
    return new RunRetries(file, stateDir !== undefined);
  }

  /** hooks.queue: runs wait for their next try in Redis, where any taker finds them when due. */
  share(schedule: SharedRetrySchedule): void {
    this.#shared = schedule;
  }

  /**
   * A due try taken from the queue: kept here while it runs (its start written before the model
   * is asked, as for a try of this schedule). Resolves once that is on disk.
   */
  taken(run: AcceptedRun, attempts: readonly RunAttempt[]): Promise<void> {
    return this.#file.put(run.runId, { run, attempts: [...attempts], dueAt: Date.now() });
  }

  /** Whether the run was in the schedule when the process started (the core finishes it). */
  tookBack(runId: string): boolean {
    return this.#tookBack.has(runId);
  }

  /** The tries so far of a run that is being retried; undefined for a run on its first try. */
  attemptsOf(runId: string): readonly RunAttempt[] | undefined {
    return this.#file.get(runId)?.attempts;
  }

  /**
   * Starts the schedule taken back at start: `onDue` gets each run when its next try is due; those
   * whose time passed while the process was down go from now on, spread as they were due (at most
   * `maxGapMs` apart: retry/overdue.ts). Returns the runs whose try a stop cut off.
   */
  resume(onDue: (run: AcceptedRun) => void, maxGapMs: number): RunRetry[] {
    this.#onDue = onDue;
    const cutOff: RunRetry[] = [];
    const waiting: { item: RunRetry; dueAt: number }[] = [];
    for (const retry of [...this.#file.records.values()]) {
      // In Redis: another instance (or this one) carries out its next try. The marker has served.
      if (retry.shared) void this.#file.remove(retry.run.runId).catch(() => {});
      else if (retry.started) cutOff.push(retry);
      else waiting.push({ item: retry, dueAt: retry.dueAt });
    }
    for (const { item, at } of spreadOverdue(waiting, Date.now(), maxGapMs)) {
      this.#queue.add(item.run.runId, at, item.run);
    }
    return cutOff;
  }

  /** Keeps the run for its next try at dueAt; resolves once that is on disk, and only then schedules it. */
  async schedule(run: AcceptedRun, attempts: readonly RunAttempt[], dueAt: number): Promise<void> {
    if (this.#shared) {
      // The marker first: once in Redis, the try may start anywhere, and a start here must not
      // take the run for one the stop interrupted. It names the run only (no prompt kept here).
      await this.#file.put(run.runId, { run: { ...run, prompt: '' }, attempts: [], dueAt, shared: true });
      await this.#shared({ run, attempts: [...attempts], dueAt });
      return;
    }
    await this.#file.put(run.runId, { run, attempts: [...attempts], dueAt });
    this.#queue.add(run.runId, dueAt, run);
  }

  /** The run's next try starts: resolves once that is on disk. */
  starting(runId: string): Promise<void> {
    const retry = this.#file.get(runId);
    return retry ? this.#file.put(runId, { ...retry, started: true }) : Promise.resolve();
  }

  /** The run has its final outcome: forgotten here. */
  done(runId: string): Promise<void> {
    this.#queue.remove(runId);
    return this.#file.remove(runId);
  }

  /** Runs waiting here for a try that has not started (they stay in the file for the next start). */
  waiting(): RunRetry[] {
    return [...this.#file.records.values()].filter((retry) => !retry.started && !retry.shared);
  }

  /** Nothing falls due after this. */
  stop(): void {
    this.#queue.close();
  }

  /** Waits for the writes under way. */
  close(): Promise<void> {
    this.stop();
    return this.#file.close();
  }
}
