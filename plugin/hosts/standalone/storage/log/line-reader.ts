// Reads the lines of a JSONL file in bounded chunks, forwards or backwards from a byte offset, so no
// file is ever held as one string (V8 refuses strings past about 512 MiB) and no read holds the event
// loop for longer than one chunk takes to split and parse.
import type { FileHandle } from 'node:fs/promises';

const NEWLINE = 0x0a;
/** Bytes read per call: large enough to amortise the thread-pool hop, small enough to parse quickly. */
export const CHUNK_BYTES = 64 * 1024;
/** A "line" longer than this is no record we wrote (records are bounded by the hook body limit): skipped. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

export interface Line {
  /** Byte offset of the line's first byte in the file. */
  offset: number;
  /** The line without its newline. */
  bytes: Buffer;
}

export async function readFully(fh: FileHandle, buf: Buffer, length: number, position: number): Promise<number> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

/**
 * The complete lines of [start, end), first to last. A last piece without its newline is left out
 * (a torn line, or one still being written).
 */
export async function* linesForward(fh: FileHandle, start: number, end: number): AsyncGenerator<Line> {
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let pos = start;
  let carry: Buffer[] = [];
  let carryBytes = 0;
  let carryStart = start;
  let oversize = false;
  while (pos < end) {
    const got = await readFully(fh, chunk, Math.min(CHUNK_BYTES, end - pos), pos);
    if (got === 0) break;
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, from);
      if (nl < 0 || nl >= got) break;
      const piece = chunk.subarray(from, nl);
      if (!oversize) {
        const bytes = carry.length === 0 ? Buffer.from(piece) : Buffer.concat([...carry, piece]);
        yield { offset: carryStart, bytes };
      }
      carry = [];
      carryBytes = 0;
      oversize = false;
      from = nl + 1;
      carryStart = pos + from;
    }
    if (from < got && !oversize) {
      carryBytes += got - from;
      if (carryBytes > MAX_LINE_BYTES) {
        oversize = true;
        carry = [];
      } else carry.push(Buffer.from(chunk.subarray(from, got)));
    }
    pos += got;
  }
}

/** The lines before `end`, last to first; `end` must be a line boundary (0 or just after a newline). */
export async function* linesBackward(fh: FileHandle, end: number): AsyncGenerator<Line> {
  const start = 0;
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let pos = end;
  // The bytes after the last newline seen, in file order: the end of a line whose start is further back.
  let carry: Buffer[] = [];
  let carryBytes = 0;
  let oversize = false;
  let skipTrailing = true; // the byte before `end` is the newline of the last line
  while (pos > start) {
    const from = Math.max(start, pos - CHUNK_BYTES);
    const got = await readFully(fh, chunk, pos - from, from);
    if (got < pos - from) return; // the file shrank under us: nothing reliable to give
    let to = got;
    if (skipTrailing) {
      skipTrailing = false;
      if (chunk[to - 1] === NEWLINE) to--;
    }
    for (;;) {
      const nl = to > 0 ? chunk.lastIndexOf(NEWLINE, to - 1) : -1;
      if (nl < 0) break;
      const piece = chunk.subarray(nl + 1, to);
      if (!oversize) {
        const bytes = carry.length === 0 ? Buffer.from(piece) : Buffer.concat([piece, ...carry]);
        yield { offset: from + nl + 1, bytes };
      }
      carry = [];
      carryBytes = 0;
      oversize = false;
      to = nl;
    }
    if (to > 0 && !oversize) {
      carryBytes += to;
      if (carryBytes > MAX_LINE_BYTES) {
        oversize = true;
        carry = [];
      } else carry.unshift(Buffer.from(chunk.subarray(0, to)));
    }
    pos = from;
  }
  if (!oversize && carry.length > 0) yield { offset: 0, bytes: Buffer.concat(carry) };
}
