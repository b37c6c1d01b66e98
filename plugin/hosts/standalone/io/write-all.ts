// Writes a whole buffer to a descriptor through libuv's thread pool, continuing after partial writes.
// The callback API: FileHandle.writeFile is an async loop of promise-wrapped writes, whose bookkeeping
// shows in the gateway's throughput under a flood of wakes (docs/performance.md).
import { write } from 'node:fs';

/** A non-blocking descriptor (a pipe on standard output) that is full is tried again after this long. */
const RETRY_MS = 20;

/** Writes data at the descriptor's position (the end, for a file open for appending), then calls done. */
export function writeAll(fd: number, data: Buffer, done: (err?: Error | null) => void): void {
  const from = (at: number): void =>
    write(fd, data, at, data.length - at, null, (err, written) => {
      if (err && (err as NodeJS.ErrnoException).code === 'EAGAIN') setTimeout(() => from(at), RETRY_MS);
      else if (err) done(err);
      else if (at + written >= data.length) done();
      else if (written === 0) done(new Error(`nothing was written to descriptor ${fd}`));
      else from(at + written);
    });
  from(0);
}
