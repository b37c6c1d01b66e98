// The state the logs of one storage share (a pooled write buffer, the kept-handle budget, the rounds,
// how they sync).
import { CommitRounds } from './commit-rounds.ts';
import { FileSync } from '../../../../util/file-sync.ts';
import { LoopWrites } from './loop-writes.ts';

/**
 * What the logs of one storage share: the commit rounds, where batches are written, how they sync,
 * the write buffers and the budget of kept file handles. One per gateway, so two gateways in one process do not share them.
 *
 * Batches are encoded into buffers taken from a small pool and handed back after the write: a fresh
 * buffer per batch is fresh memory for every write (page faults, and memory held until a garbage
 * collection finds the buffer), which a flood of large events turns into hundreds of MB. Only the
 * pages a batch touches become resident, so a 1 MB buffer costs what the batch needs.
 */
export class LogResources {
  readonly rounds = new CommitRounds();
  /** Whether a batch is written on the event loop or through the thread pool. */
  readonly loopWrites = new LoopWrites();
  readonly buffers: Buffer[] = [];
  /** Append handles kept open between batches; past the cap a batch opens and closes. */
  keptHandles = 0;
  constructor(
    readonly maxKeptHandles = 256,
    /** When written lines are synced to disk (storage.fsync); none by default. */
    readonly sync = new FileSync(),
  ) {}
}
