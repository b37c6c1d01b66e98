// What the storage block of the standalone gateway's config sets (config: storage.*): the bounds of
// what it keeps (storage-limits.ts) and when its logs are synced to disk (util/file-sync.ts).
import type { FsyncMode } from '../../../util/file-sync.ts';
import { DEFAULT_STORAGE_LIMITS, type StorageLimits } from './storage-limits.ts';

export type { FsyncMode } from '../../../util/file-sync.ts';

export interface FsyncSettings {
  /** never: the kernel's writeback; interval: a background sync; always: answers wait for it. */
  fsync: FsyncMode;
  /** Under "interval", the longest a written line waits for its sync. */
  fsyncIntervalMs: number;
}

export type StorageSettings = StorageLimits & FsyncSettings;

export const DEFAULT_FSYNC_SETTINGS: FsyncSettings = { fsync: 'interval', fsyncIntervalMs: 1000 };

export const DEFAULT_STORAGE_SETTINGS: StorageSettings = { ...DEFAULT_STORAGE_LIMITS, ...DEFAULT_FSYNC_SETTINGS };
