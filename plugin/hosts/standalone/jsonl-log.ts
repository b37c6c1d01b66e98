// Durable append-only JSON Lines file with group commit.
//
// Every append is serialised to one line and queued. The queue is drained by a single writer, once per
// commit round (commit-rounds.ts): all lines queued since the last write are written with one write (a
// batch over 1 MB with several, in order), and each append's promise settles when the write carrying its
// line has completed. Reads and writes of the file are serialised through one in-process lock so a reader
// never sees a half-written batch of this instance. The requirement is surviving a killed process
// (kill -9), not power loss, so no fsync.

import { appendFile, mkdir, open, readFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../host-kit.ts';
import { inNextRound } from './commit-rounds.ts';
import { writeAll } from '../../util/write-all.ts';
import { jsonLineBytes, jsonLineText, toJsonLine, writeJsonLine, type JsonLine } from './json-line.ts';

interface Pending {
  /** The record as JSON, without the newline (added when the batch is encoded). */
  line: JsonLine;
  /** Absent for write(): nobody waits, and a failure is only logged. */
  resolve?: () => void;
  reject?: (err: unknown) => void;
}

const NEWLINE = 0x0a;
/** A torn tail longer than this is not worth trying to complete; it is cut off. */
const MAX_TAIL_SALVAGE = 1024 * 1024;

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

function errCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

function isRecord(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readFully(fh: FileHandle, buf: Buffer, length: number, position: number): Promise<number> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

/**
 * Batches are encoded into buffers taken from a small shared pool and handed back after the write:
 * a fresh buffer per batch is fresh memory for every write (page faults, and memory held until a
 * garbage collection finds the buffer), which a flood of large events turns into hundreds of MB.
 * Only the pages a batch touches become resident, so a 1 MB buffer costs what the batch needs.
 */
const WRITE_BUFFER_BYTES = 1024 * 1024;
const POOLED_BUFFERS = 4;
const bufferPool: Buffer[] = [];

/** One line with its newline, for a record too large for a pooled buffer. */
function encodeLine(line: JsonLine): Buffer {
  const data = Buffer.allocUnsafe(jsonLineBytes(line) + 1);
  data[writeJsonLine(line, data, 0)] = NEWLINE;
  return data;
}

/** Append handles kept open between batches, process-wide; past the cap a batch opens and closes. */
const MAX_KEPT_HANDLES = 256;
/** A log that has not been written for this long gives its handle back. */
const IDLE_CLOSE_MS = 1000;
let keptHandles = 0;

export class JsonlLog<T extends object> {
  readonly file: string;
  readonly #logger: Logger;
  #batch: Pending[] = [];
  /** Settles when the writer has emptied the queue (set while it runs). */
  #draining: Promise<void> | undefined;
  /** Tail of the lock chain: every file read or write runs after the previous one settled. */
  #io: Promise<void> = Promise.resolve();
  #repaired: Promise<void> | undefined;
  #dirReady = false;
  #writes = 0;
  #appends = 0;
  #handle: FileHandle | undefined;
  #idle: NodeJS.Timeout | undefined;

  constructor(file: string, logger: Logger) {
    this.file = file;
    this.#logger = logger;
  }

  /** Number of fs writes issued so far (each carries one whole batch). */
  get writeCount(): number {
    return this.#writes;
  }

  /** Number of records appended so far through this instance. */
  get appendCount(): number {
    return this.#appends;
  }

  /** Settles when the line carrying the record is written. */
  append(record: T): Promise<void> {
    if (!isRecord(record)) return Promise.reject(new TypeError('JsonlLog.append expects an object record'));
    let line: JsonLine;
    try {
      line = toJsonLine(record);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => this.#enqueue({ line, resolve, reject }));
  }

  /** Appends without a promise to wait on, for records nobody waits for (a failed write is logged). */
  write(record: T): void {
    if (!isRecord(record)) throw new TypeError('JsonlLog.write expects an object record');
    this.#enqueue({ line: toJsonLine(record) });
  }

  #enqueue(pending: Pending): void {
    this.#appends++;
    this.#batch.push(pending);
    this.#schedule();
  }

  readAll(): Promise<T[]> {
    return this.#exclusive(async () => {
      try {
        await this.#repairOnce();
      } catch (err) {
        // Reading does not need the repair; the next append retries it (and reports a failure there).
        this.#logger.warn(`jsonl log: could not check the tail of ${this.file}`, {
          file: this.file,
          code: errCode(err),
        });
      }
      let text = '';
      try {
        text = await readFile(this.file, 'utf8');
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
      const records = this.#parse(text);
      // Lines still queued (not yet handed to the writer) are not in the file yet.
      for (const pending of this.#batch) records.push(JSON.parse(jsonLineText(pending.line)) as T);
      return records;
    });
  }

  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
    await this.#io;
  }

  async close(): Promise<void> {
    await this.flush();
    await this.#exclusive(() => this.#release());
  }

  #exclusive<R>(fn: () => Promise<R>): Promise<R> {
    const run = this.#io.then(fn);
    this.#io = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  #schedule(): void {
    if (this.#draining) return;
    this.#draining = new Promise((resolve) => inNextRound(() => void this.#drain().then(resolve, resolve)));
  }

  /** One batch per round: what gathers while it is written waits for a later round. */
  async #drain(): Promise<void> {
    try {
      await this.#exclusive(() => this.#writeBatch());
    } finally {
      this.#draining = undefined;
      if (this.#batch.length > 0) this.#schedule();
    }
  }

  async #writeBatch(): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    if (batch.length === 0) return;
    /** Lines before this index are in the file and their appends settled. */
    let done = 0;
    const buffer = bufferPool.pop() ?? Buffer.allocUnsafeSlow(WRITE_BUFFER_BYTES);
    try {
      await this.#repairOnce();
      // A batch that does not fit one buffer goes out in several writes, in order.
      let used = 0;
      for (let i = 0; i < batch.length; i++) {
        const line = batch[i]!.line;
        const size = jsonLineBytes(line) + 1;
        if (used + size > buffer.length && used > 0) {
          await this.#appendData(buffer.subarray(0, used));
          done = this.#settle(batch, done, i);
          used = 0;
        }
        if (size > buffer.length) {
          await this.#appendData(encodeLine(line));
          done = this.#settle(batch, done, i + 1);
          continue;
        }
        used = writeJsonLine(line, buffer, used);
        buffer[used++] = NEWLINE;
      }
      if (used > 0) await this.#appendData(buffer.subarray(0, used));
      this.#settle(batch, done, batch.length);
    } catch (err) {
      this.#logger.error(`jsonl log: write to ${this.file} failed`, {
        file: this.file,
        records: batch.length - done,
        code: errCode(err),
      });
      for (let i = done; i < batch.length; i++) batch[i]!.reject?.(err);
    } finally {
      if (bufferPool.length < POOLED_BUFFERS) bufferPool.push(buffer);
    }
  }

  /** Settles the appends of lines [from, to), now written; returns `to`. */
  #settle(batch: readonly Pending[], from: number, to: number): number {
    for (let i = from; i < to; i++) batch[i]!.resolve?.();
    return to;
  }

  async #appendData(data: Buffer): Promise<void> {
    if (!this.#dirReady) {
      await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      this.#dirReady = true;
    }
    this.#writes++;
    // One write per batch on a kept handle, instead of open, write and close.
    if (!this.#handle && keptHandles < MAX_KEPT_HANDLES) {
      try {
        this.#handle = await open(this.file, 'a', 0o600);
        keptHandles++;
      } catch {
        // Fall back to appendFile, which also recreates a vanished directory below.
      }
    }
    if (this.#handle) {
      const fd = this.#handle.fd;
      await new Promise<void>((resolve, reject) => writeAll(fd, data, (err) => (err ? reject(err) : resolve())));
      if (this.#idle) this.#idle.refresh();
      else {
        this.#idle = setTimeout(() => void this.#exclusive(() => this.#release()), IDLE_CLOSE_MS);
        this.#idle.unref();
      }
      return;
    }
    try {
      await appendFile(this.file, data, { mode: 0o600 });
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
      // The directory vanished under us; recreate it once and retry.
      await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      this.#writes++;
      await appendFile(this.file, data, { mode: 0o600 });
    }
  }

  async #release(): Promise<void> {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    const handle = this.#handle;
    if (!handle) return;
    this.#handle = undefined;
    keptHandles--;
    await handle.close();
  }

  #repairOnce(): Promise<void> {
    if (!this.#repaired) {
      this.#repaired = this.#repairTail().catch((err: unknown) => {
        this.#repaired = undefined; // try again next time
        throw err;
      });
    }
    return this.#repaired;
  }

  /** Makes sure the file ends in "\n", so new lines are never glued onto a torn one. */
  async #repairTail(): Promise<void> {
    let fh: FileHandle;
    try {
      fh = await open(this.file, 'r+');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return;
      throw err;
    }
    try {
      const { size } = await fh.stat();
      if (size === 0) return;
      const one = Buffer.alloc(1);
      await readFully(fh, one, 1, size - 1);
      if (one[0] === NEWLINE) return;

      // Find the byte after the last newline.
      const chunk = Buffer.alloc(64 * 1024);
      let end = size;
      let cut = 0;
      while (end > 0) {
        const start = Math.max(0, end - chunk.length);
        const got = await readFully(fh, chunk, end - start, start);
        const idx = chunk.subarray(0, got).lastIndexOf(NEWLINE);
        if (idx >= 0) {
          cut = start + idx + 1;
          break;
        }
        end = start;
      }

      // A tail that is a complete record lost only its newline: keep it.
      const tailLength = size - cut;
      if (tailLength <= MAX_TAIL_SALVAGE) {
        const tail = Buffer.alloc(tailLength);
        await readFully(fh, tail, tailLength, cut);
        if (this.#parseLine(tail.toString('utf8')) !== undefined) {
          await fh.write('\n', size, 'utf8');
          this.#logger.warn(`jsonl log: ${this.file} did not end in a newline; completed its last line`, {
            file: this.file,
          });
          return;
        }
      }
      await fh.truncate(cut);
      this.#logger.warn(`jsonl log: cut a torn last line (${tailLength} bytes) from ${this.file}`, {
        file: this.file,
        bytes: tailLength,
      });
    } finally {
      await fh.close();
    }
  }

  #parseLine(line: string): T | undefined {
    try {
      const value: unknown = JSON.parse(line);
      return isRecord(value) ? (value as T) : undefined;
    } catch {
      return undefined;
    }
  }

  #parse(text: string): T[] {
    const out: T[] = [];
    const lines = text.split('\n');
    const endsClean = text.endsWith('\n');
    // With a trailing newline the last split element is the empty remainder.
    const count = endsClean ? lines.length - 1 : lines.length;
    for (let i = 0; i < count; i++) {
      const line = lines[i]!;
      if (line.trim() === '') continue;
      const record = this.#parseLine(line);
      if (record !== undefined) {
        out.push(record);
        continue;
      }
      const torn = i === count - 1;
      this.#logger.warn(
        torn
          ? `jsonl log: skipped a torn last line in ${this.file}`
          : `jsonl log: skipped an unparseable line in ${this.file}`,
        { file: this.file, line: i + 1 },
      );
    }
    return out;
  }
}
