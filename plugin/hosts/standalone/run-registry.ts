// Hook runs as the admin API shows them: every status change is kept in memory (the most recent
// runs) and appended to <stateDir>/data/runs.jsonl, so a restart can tell which runs never finished.
import type { Logger, RunRecord } from '../../host.ts';
import { JsonlLog } from './jsonl-log.ts';
import { isoNow } from '../../util/iso-now.ts';

const KEEP_IN_MEMORY = 10_000;
const FINAL = new Set(['ok', 'error', 'timeout']);

export class RunRegistry {
  private readonly runs = new Map<string, Readonly<RunRecord>>();
  /**
   * Run ids in the order they were first seen, in a ring: the slot of the next new run holds the
   * oldest, which is forgotten. Asking the Map for its first key instead walks past every entry
   * deleted since it last compacted, which made each update cost microseconds.
   */
  private readonly order: (string | undefined)[] = new Array(KEEP_IN_MEMORY);
  private next = 0;
  private readonly log: JsonlLog<RunRecord & { at: string }>;

  constructor(file: string, logger: Logger) {
    this.log = new JsonlLog(file, logger);
  }

  /** Loads the log; returns the runs that were accepted but never finished (the process died). */
  async open(): Promise<RunRecord[]> {
    for (const r of await this.log.readAll()) this.remember(r);
    return [...this.runs.values()].filter((r) => !FINAL.has(r.status));
  }

  /**
   * Keeps the record as given: the run service hands over a fresh record for every change. For an
   * accepted run, settles once its line is in the file (the 202 waits for it).
   */
  update(record: Readonly<RunRecord>): Promise<void> | undefined {
    this.remember(record);
    // Recovery needs only "accepted" and "finished": running is kept in memory.
    if (record.status === 'running') return undefined;
    const line = { ...record, at: isoNow() };
    if (record.status === 'queued') return this.log.append(line);
    // A lost final line is not worth failing a finished run for; JsonlLog logs write failures.
    this.log.write(line);
    return undefined;
  }

  get(runId: string): RunRecord | undefined {
    return this.runs.get(runId);
  }

  close(): Promise<void> {
    return this.log.close();
  }

  private remember(r: Readonly<RunRecord>): void {
    if (!this.runs.has(r.runId)) {
      const oldest = this.order[this.next];
      if (oldest !== undefined) this.runs.delete(oldest);
      this.order[this.next] = r.runId;
      this.next = (this.next + 1) % KEEP_IN_MEMORY;
    }
    this.runs.set(r.runId, r);
  }
}
