// Whether a batch is written on the event loop or handed to libuv's thread pool.
//
// A batch of a few KB lands in the page cache in microseconds, and handing it to a pool thread costs
// more CPU than the write itself (the thread's wake-up, then the loop's when it is done):
// docs/performance.md. But a write the kernel holds up (writeback throttling, a slow disk) would
// stall every request on the loop, so after one slow write every write goes to the pool for a while.
import { writeSync } from 'node:fs';

/** Larger batches (a large event's line) go to the pool. */
export const LOOP_WRITE_MAX_BYTES = 64 * 1024;
/**
 * A write on the loop that took longer than this (wall time: far above a page-cache write, and above
 * what a busy host's scheduler usually takes from a thread mid-write)...
 */
export const SLOW_LOOP_WRITE_MS = 20;
/** ...sends every write to the pool for this long. */
export const POOL_AFTER_SLOW_MS = 10_000;

export class LoopWrites {
  #poolUntil = -Infinity;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Whether a batch of this size is written on the loop now. */
  fits(bytes: number): boolean {
    return bytes <= LOOP_WRITE_MAX_BYTES && this.now() >= this.#poolUntil;
  }

  /**
   * Writes the whole buffer at the descriptor's position (the end, for a file open for appending);
   * throws what the write throws. Returns how long it took when that was slow (writes go to the pool
   * from now on), else undefined.
   */
  write(fd: number, data: Buffer): number | undefined {
    const started = this.now();
    for (let at = 0; at < data.length;) {
      const written = writeSync(fd, data, at, data.length - at);
      if (written === 0) throw new Error(`nothing was written to descriptor ${fd}`);
      at += written;
    }
    const took = this.now() - started;
    if (took <= SLOW_LOOP_WRITE_MS) return undefined;
    this.#poolUntil = this.now() + POOL_AFTER_SLOW_MS;
    return took;
  }
}
