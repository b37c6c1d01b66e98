// The bounds of what the standalone gateway keeps on disk (config: storage.*; README: Storage bounds).

export interface StorageLimits {
  /** A log's newest segment is closed and a new one started past this size. */
  segmentBytes: number;
  /** History kept per session, oldest segments dropped first. */
  sessionRetainBytes: number;
  /** Deliveries kept in the outbox. */
  outboxRetainBytes: number;
  /** Run index kept: runs older than it are no longer found once they leave memory. */
  runIndexRetainBytes: number;
}

const MiB = 1024 * 1024;
export const DEFAULT_STORAGE_LIMITS: StorageLimits = {
  segmentBytes: 16 * MiB,
  sessionRetainBytes: 256 * MiB,
  outboxRetainBytes: 256 * MiB,
  runIndexRetainBytes: 64 * MiB,
};
