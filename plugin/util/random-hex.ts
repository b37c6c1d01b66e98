// Random hex ids from a pooled CSPRNG buffer: one randomFillSync per POOL bytes instead of one per id
// (each is a syscall, and ids are drawn for every wrapped payload). The bytes are as unpredictable.
import { randomFillSync } from 'node:crypto';

const POOL = 4096;
const pool = Buffer.alloc(POOL);
let offset = POOL;

export function randomHex(bytes: number): string {
  if (bytes > POOL) throw new RangeError(`randomHex takes at most ${POOL} bytes`);
  if (offset + bytes > POOL) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  // Never hand out the same bytes twice.
  pool.fill(0, offset, offset + bytes);
  offset += bytes;
  return hex;
}
