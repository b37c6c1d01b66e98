// When the logs of one storage ask the kernel to put their written lines on disk (config:
// storage.fsync). A write alone survives a killed process; only a sync survives a crash of the
// machine or a power cut. "never" leaves it to the kernel's writeback; "always" syncs each log's
// batch before its appends settle (jsonl-log.ts), so one sync covers every request of a round;
// "interval" syncs in the background here, nobody waiting, at most `intervalMs` after a write.

/** How the logs sync: the values of storage.fsync. */
export type FsyncMode = 'never' | 'interval' | 'always';

/** A log with lines written but maybe not synced; it reports its own failures. */
export interface SyncTarget {
  syncNow(): Promise<void>;
}

export class LogSync {
  readonly #dirty = new Set<SyncTarget>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly mode: FsyncMode = 'never',
    readonly intervalMs = 1000,
  ) {}

  /** Whether a log keeps track of what it has not synced (not under "never"). */
  get tracks(): boolean {
    return this.mode !== 'never';
  }

  /** A log has written lines; under "interval" the next background sync takes them. */
  written(log: SyncTarget): void {
    if (this.mode !== 'interval') return;
    this.#dirty.add(log);
    if (this.#timer) return;
    // Counted from the first unsynced write, so no line waits longer than the interval. Unref'd: a
    // log that closes syncs what it has left itself.
    this.#timer = setTimeout(this.#syncAll, this.intervalMs);
    this.#timer.unref();
  }

  /** A log that closed: it synced what it could itself, and is not tried again here. */
  forget(log: SyncTarget): void {
    this.#dirty.delete(log);
  }

  /** How many logs wait for the next background sync. */
  get waiting(): number {
    return this.#dirty.size;
  }

  readonly #syncAll = (): void => {
    this.#timer = undefined;
    const logs = [...this.#dirty];
    this.#dirty.clear();
    for (const log of logs) void log.syncNow();
  };
}
