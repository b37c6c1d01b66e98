// Which hooks are paused (<stateDir>/pauses.jsonl): read on every request, changed by the admin API
// here or, with hooks.sharedState, by another instance (shared-pauses.ts tells this one). A resume is
// kept as a record too, so a start can tell a hook that was resumed from one whose state was lost.
import type { FileSyncPolicy, Logger } from '../host.ts';
import { readStateRecords, StateFile } from '../util/state-file.ts';

export interface PauseRecord {
  /** ms since the epoch. */
  at: number;
  /** The hook was resumed then (a record without it is a pause). */
  resumed?: true;
}

function isPauseRecord(value: unknown): value is PauseRecord {
  const v = value as Partial<PauseRecord> | null;
  return typeof v === 'object' && v !== null && typeof v.at === 'number' && (v.resumed ?? true) === true;
}

const pausedBy = (record: PauseRecord | undefined): boolean => record !== undefined && record.resumed !== true;

export type PauseListener = (hook: string, paused: boolean) => void;

export class Pauses {
  readonly #file: StateFile<PauseRecord>;
  readonly #listeners: PauseListener[] = [];

  private constructor(file: StateFile<PauseRecord>) {
    this.#file = file;
  }

  static async open(path: string | undefined, logger: Logger, sync?: FileSyncPolicy): Promise<Pauses> {
    return new Pauses(await StateFile.open(path, isPauseRecord, logger, { sync }));
  }

  isPaused(hook: string): boolean {
    return pausedBy(this.#file.get(hook));
  }

  /** Whether the file says anything of the hook: paused, or resumed. */
  knows(hook: string): boolean {
    return this.#file.records.has(hook);
  }

  /** When the hook's state last changed (as far as this instance knows; 0 when never). */
  changedAt(hook: string): number {
    return this.#file.get(hook)?.at ?? 0;
  }

  /** The paused hooks. */
  hooks(): string[] {
    return [...this.#file.records].filter(([, record]) => pausedBy(record)).map(([hook]) => hook);
  }

  /** Told each change, after it is in force here (before it is on disk). */
  onChange(listener: PauseListener): void {
    this.#listeners.push(listener);
  }

  /** Pauses or resumes the hook; resolves once that is on disk. Setting what is already set does nothing. */
  async set(hook: string, paused: boolean, at = Date.now()): Promise<void> {
    if (paused === this.isPaused(hook)) return;
    const written = this.#file.put(hook, paused ? { at } : { at, resumed: true });
    for (const listener of this.#listeners) listener(hook, paused);
    await written;
  }

  /**
   * Records a hook never paused as resumed (at 0: older than any change shared), so actions it holds
   * for its budget are not taken at the next start for those of a pause whose record was lost.
   */
  async know(hook: string): Promise<void> {
    if (!this.knows(hook)) await this.#file.put(hook, { at: 0, resumed: true });
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}

/** The hooks paused in a pauses file, read without writing anything (the dry run's view). */
export async function readPausedHooks(path: string): Promise<Set<string>> {
  const { records } = await readStateRecords(path, isPauseRecord);
  return new Set([...records].filter(([, record]) => pausedBy(record)).map(([hook]) => hook));
}
