// Hook runs as the admin API shows them: every status change is kept in memory (the most recent
// runs) and appended to <stateDir>/data/runs.jsonl, so a restart can tell which runs never finished.
import type { Logger, RunRecord } from '../../host.ts';
import { JsonlLog } from './jsonl-log.ts';
import { isoNow } from '../../util/iso-now.ts';

const KEEP_IN_MEMORY = 10_000;
const FINAL = new Set(['ok', 'error', 'timeout']);

export class RunRegistry {
  private readonly runs = new Map<string, Readonly<RunRecord>>();
  private readonly log: JsonlLog<RunRecord & { at: string }>;

  constructor(file: string, logger: Logger) {
    this.log = new JsonlLog(file, logger);
  }

  /** Loads the log; returns the runs that were accepted but never finished (the process died). */
  async open(): Promise<RunRecord[]> {
    for (const r of await this.log.readAll()) this.remember(r);
    return [...this.runs.values()].filter((r) => !FINAL.has(r.status));
  }

  /** Keeps the record as given: the run service hands over a fresh record for every change. */
  update(record: Readonly<RunRecord>): void {
    this.remember(record);
    // Recovery needs only "accepted" and "finished": running is kept in memory.
    if (record.status === 'running') return;
    // A lost status line is not worth failing a run for; JsonlLog logs write failures.
    this.log.write({ ...record, at: isoNow() });
  }

  get(runId: string): RunRecord | undefined {
    return this.runs.get(runId);
  }

  close(): Promise<void> {
    return this.log.close();
  }

  private remember(r: Readonly<RunRecord>): void {
    this.runs.delete(r.runId);
    this.runs.set(r.runId, r);
    if (this.runs.size > KEEP_IN_MEMORY) this.runs.delete(this.runs.keys().next().value!);
  }
}
