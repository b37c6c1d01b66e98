// Which hooks are paused (<stateDir>/pauses.jsonl): read on every request, changed by the admin API
// here or, with hooks.sharedState, by another instance (shared-pauses.ts tells this one).
import type { Logger } from '../host.ts';
import { readStateRecords, StateFile } from '../util/state-file.ts';

export interface PauseRecord {
  /** ms since the epoch. */
  at: number;
}

function isPauseRecord(value: unknown): value is PauseRecord {
  return typeof value === 'object' && value !== null && typeof (value as PauseRecord).at === 'number';
}

export type PauseListener = (hook: string, paused: boolean) => void;

export class Pauses {
  readonly #file: StateFile<PauseRecord>;
  readonly #listeners: PauseListener[] = [];
  /** When each hook was last resumed here (since the start): shared state compares change times. */
  readonly #resumedAt = new Map<string, number>();

  private constructor(file: StateFile<PauseRecord>) {
    this.#file = file;
  }

  static async open(path: string | undefined, logger: Logger): Promise<Pauses> {
    return new Pauses(await StateFile.open(path, isPauseRecord, logger));
  }

  isPaused(hook: string): boolean {
    return this.#file.records.has(hook);
  }

  /** When the hook's state last changed (as far as this instance knows; 0 when never). */
  changedAt(hook: string): number {
    return this.#file.get(hook)?.at ?? this.#resumedAt.get(hook) ?? 0;
  }

  /** The paused hooks. */
  hooks(): string[] {
    return [...this.#file.records.keys()];
  }

  /** Told each change, after it is in force here (before it is on disk). */
  onChange(listener: PauseListener): void {
    this.#listeners.push(listener);
  }

  /** Pauses or resumes the hook; resolves once that is on disk. Setting what is already set does nothing. */
  async set(hook: string, paused: boolean, at = Date.now()): Promise<void> {
    if (paused === this.isPaused(hook)) return;
    if (!paused) this.#resumedAt.set(hook, at);
    const written = paused ? this.#file.put(hook, { at }) : this.#file.remove(hook);
    for (const listener of this.#listeners) listener(hook, paused);
    await written;
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}

/** The hooks paused in a pauses file, read without writing anything (the dry run's view). */
export async function readPausedHooks(path: string): Promise<Set<string>> {
  return new Set((await readStateRecords(path, isPauseRecord)).records.keys());
}
