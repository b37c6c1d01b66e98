// When files ask the kernel to put their written lines on disk (the standalone's storage.fsync: its
// logs, and the plugin's state files through the host contract). A write alone survives a killed
// process; only a sync survives a crash of the machine or a power cut. "never" leaves it to the
// kernel's writeback; "always" syncs each file's batch before its writes settle (the standalone's
// jsonl-log.ts, util/state-file.ts), so one sync covers every request of a round; "interval" syncs
// in the background here, nobody waiting, at most `intervalMs` after a write.

import type { FileSyncPolicy, FsyncMode, SyncTarget } from '../host.ts';

export type { FsyncMode, SyncTarget } from '../host.ts';

export class FileSync implements FileSyncPolicy {
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
