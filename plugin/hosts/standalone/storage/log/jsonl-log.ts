// Durable append-only JSON Lines log with group commit, kept in segments of bounded size: the
// writer, rotation and retention, readers and cursors, and tail repair. The contract is in ../README.md.

import { createHash } from 'node:crypto';
import { appendFile, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../../../host.ts';
import { errnoCode } from '../../../../util/errors.ts';
import { CommitRounds } from './commit-rounds.ts';
import { writeAll } from '../../io/write-all.ts';
import { jsonLineBytes, toJsonLine, writeJsonLine, type JsonLine } from './json-line.ts';
import { linesBackward, linesForward, readFully, type Line } from './line-reader.ts';
import { repairTail } from './tail-repair.ts';

interface Pending {
  /** The record as JSON, without the newline; BARRIER for whenWritten(). */
  line: JsonLine;
  /** Absent for write(): nobody waits, and a failure is only logged. */
  resolve?: () => void;
  reject?: (err: unknown) => void;
}

/** A queued "line" that writes nothing: it settles once everything queued before it is written. */
const BARRIER = '';
const NEWLINE = 0x0a;

/**
 * What the logs of one storage share: the commit rounds, the write buffers and the budget of kept
 * file handles. One per gateway, so two gateways in one process do not share them.
 *
 * Batches are encoded into buffers taken from a small pool and handed back after the write: a fresh
 * buffer per batch is fresh memory for every write (page faults, and memory held until a garbage
 * collection finds the buffer), which a flood of large events turns into hundreds of MB. Only the
 * pages a batch touches become resident, so a 1 MB buffer costs what the batch needs.
 */
export class LogResources {
  readonly rounds = new CommitRounds();
  readonly buffers: Buffer[] = [];
  /** Append handles kept open between batches; past the cap a batch opens and closes. */
  keptHandles = 0;
  constructor(readonly maxKeptHandles = 256) {}
}

const WRITE_BUFFER_BYTES = 1024 * 1024;
const POOLED_BUFFERS = 4;
/** A log that has not been written for this long gives its handle back. */
const IDLE_CLOSE_MS = 1000;

export interface LogOptions {
  resources?: LogResources;
  /** The active segment is rotated once it holds this many bytes (default: never). */
  segmentBytes?: number;
  /** Oldest segments are deleted past this many bytes in all (default: never). */
  retainBytes?: number;
  /** The first line of every new segment. */
  segmentHeader?: () => object;
  /** Sequence numbers of the rotated segments on disk, when the caller has listed the directory. */
  segments?: readonly number[];
}

/** Where a line starts: its segment and byte offset. */
export interface Position {
  seq: number;
  offset: number;
}

export interface Page<R> {
  records: R[];
  /** Where the oldest record of the page starts, when older records exist. */
  before?: Position;
}

interface Segment {
  seq: number;
  bytes: number;
}

function isRecord(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
}

/** One line with its newline, for a record too large for a pooled buffer. */
function encodeLine(line: JsonLine): Buffer {
  const data = Buffer.allocUnsafe(jsonLineBytes(line) + 1);
  data[writeJsonLine(line, data, 0)] = NEWLINE;
  return data;
}

/** "<file>.<seq>" -> seq, for the rotated segments of `base`. */
export function segmentSeq(name: string, base: string): number | undefined {
  if (!name.startsWith(base + '.')) return undefined;
  const rest = name.slice(base.length + 1);
  if (!/^[1-9][0-9]{0,14}$/.test(rest)) return undefined;
  return Number(rest);
}

export class JsonlLog<T extends object> {
  readonly file: string;
  readonly #logger: Logger;
  readonly #res: LogResources;
  readonly #segmentBytes: number;
  readonly #retainBytes: number;
  readonly #header: (() => object) | undefined;
  /** Tells this log's cursors from another's (made when first needed: most logs never page). */
  #tagText: string | undefined;
  #batch: Pending[] = [];
  /** Settles when the writer has emptied the queue (set while it runs). */
  #draining: Promise<void> | undefined;
  /** Tail of the lock chain: every file read or write runs after the previous one settled. */
  #io: Promise<void> = Promise.resolve();
  #prepared: Promise<void> | undefined;
  #dirReady = false;
  #writes = 0;
  #appends = 0;
  #handle: FileHandle | undefined;
  #idle: NodeJS.Timeout | undefined;
  /** Rotated segments, oldest first (known once prepared). */
  #rotated: Segment[] = [];
  #knownSegments: readonly number[] | undefined;
  /** The number the active segment gets when it is rotated. */
  #activeSeq = 1;
  #activeBytes = 0;
  /** Whether the active segment holds a record besides its header. */
  #activeHasRecords = false;

  constructor(file: string, logger: Logger, options: LogOptions = {}) {
    this.file = file;
    this.#logger = logger;
    this.#res = options.resources ?? new LogResources();
    this.#segmentBytes = options.segmentBytes ?? Infinity;
    this.#retainBytes = options.retainBytes ?? Infinity;
    this.#header = options.segmentHeader;
    this.#knownSegments = options.segments;
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
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return new Promise<void>((resolve, reject) => this.#enqueue({ line, resolve, reject }));
  }

  /** Appends without a promise to wait on, for records nobody waits for (a failed write is logged). */
  write(record: T): void {
    if (!isRecord(record)) throw new TypeError('JsonlLog.write expects an object record');
    this.#enqueue({ line: toJsonLine(record) });
  }

  /** Settles once every line queued before the call is written (or failed). */
  whenWritten(): Promise<void> {
    if (this.#batch.length === 0 && !this.#draining) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#batch.push({ line: BARRIER, resolve, reject: () => resolve() });
      this.#schedule();
    });
  }

  #enqueue(pending: Pending): void {
    this.#appends++;
    this.#res.rounds.lineQueued();
    this.#batch.push(pending);
    this.#schedule();
  }

  /**
   * Every record of every segment, oldest first, once the ones queued before are written. It holds
   * them all in memory: for tests and small logs; the gateway reads pages and tails.
   */
  async readAll(): Promise<T[]> {
    const records: T[] = [];
    const segments = await this.#snapshot();
    for (const seg of segments) {
      await this.#withSegment(seg.seq, async (fh) => {
        for await (const line of linesForward(fh, 0, seg.bytes)) {
          const record = this.#parseLine(line);
          if (record !== undefined) records.push(record);
        }
      });
    }
    return records;
  }

  /**
   * Reads the newest part of the log forwards, oldest line first: the active segment and the newest
   * rotated one, each at most its last `segmentBytes`. The header line (if any) of the active
   * segment always comes first. Each call of `visit` gets the records of one chunk.
   */
  async scanTail(visit: (records: T[]) => void, windowBytes = this.#segmentBytes): Promise<void> {
    const segments = (await this.#snapshot()).slice(-2);
    for (const seg of segments) {
      await this.#withSegment(seg.seq, async (fh) => {
        const from = Math.max(0, seg.bytes - windowBytes);
        let records: T[] = [];
        let first = true;
        if (from > 0) {
          // The segment's own header, then its tail from the first whole line on.
          const head = await this.#firstLine(fh, seg.bytes);
          if (head !== undefined) records.push(head);
        }
        let chunkBytes = 0;
        for await (const line of linesForward(fh, from, seg.bytes)) {
          if (first && from > 0) {
            first = false;
            continue; // may be the end of a line that started before the window
          }
          first = false;
          const record = this.#parseLine(line);
          if (record !== undefined) records.push(record);
          chunkBytes += line.bytes.length;
          if (chunkBytes >= 256 * 1024) {
            visit(records);
            records = [];
            chunkBytes = 0;
          }
        }
        if (records.length > 0) visit(records);
      });
    }
  }

  /** The first record of the newest segment that has one: its header, when the log writes headers. */
  async newestHead(): Promise<T | undefined> {
    const segments = await this.#snapshot();
    for (let i = segments.length - 1; i >= 0; i--) {
      const seg = segments[i]!;
      if (seg.bytes === 0) continue;
      let head: T | undefined;
      let found = false;
      await this.#withSegment(seg.seq, async (fh) => {
        found = true;
        head = await this.#firstLine(fh, seg.bytes);
      });
      if (found) return head;
    }
    return undefined;
  }

  /**
   * Reads the whole log newest line first, until `visit` returns false. With `needle`, only lines
   * holding those bytes are parsed (a search for one id need not parse every line).
   */
  async scanBackward(visit: (record: T, at: Position) => boolean, needle?: Buffer): Promise<void> {
    const segments = await this.#snapshot();
    for (let i = segments.length - 1; i >= 0; i--) {
      const seg = segments[i]!;
      let more = true;
      await this.#withSegment(seg.seq, async (fh) => {
        for await (const line of linesBackward(fh, seg.bytes)) {
          if (needle && line.bytes.indexOf(needle) < 0) continue;
          const record = this.#parseLine(line);
          if (record !== undefined && !visit(record, { seq: seg.seq, offset: line.offset })) {
            more = false;
            return;
          }
        }
      });
      if (!more) return;
    }
  }

  /**
   * The newest `limit` records that `keep` accepts, before `before` (or the end), oldest first; fewer
   * when they pass `maxBytes` of lines (but never none when one exists).
   */
  async page<R extends T>(
    keep: (record: T) => record is R,
    limit: number,
    before: Position | undefined,
    maxBytes: number,
  ): Promise<Page<R>> {
    const segments = await this.#snapshot();
    const found: { record: R; at: Position }[] = [];
    let bytes = 0;
    let full = false;
    for (let i = segments.length - 1; i >= 0 && !full; i--) {
      const seg = segments[i]!;
      if (before && seg.seq > before.seq) continue;
      const end = before && seg.seq === before.seq ? before.offset : seg.bytes;
      await this.#withSegment(seg.seq, async (fh) => {
        for await (const line of linesBackward(fh, end)) {
          const record = this.#parseLine(line);
          if (record === undefined || !keep(record)) continue;
          // One record beyond the page tells whether older ones exist.
          if (found.length === limit || (found.length > 0 && bytes + line.bytes.length > maxBytes)) {
            full = true;
            return;
          }
          bytes += line.bytes.length;
          found.push({ record, at: { seq: seg.seq, offset: line.offset } });
        }
      });
    }
    found.reverse();
    const page: Page<R> = { records: found.map((f) => f.record) };
    if (full) page.before = found[0]!.at;
    return page;
  }

  get #tag(): string {
    return (this.#tagText ??= createHash('sha256').update(path.basename(this.file)).digest('base64url').slice(0, 8));
  }

  /** A position as an opaque cursor for clients. */
  cursor(at: Position): string {
    return `${this.#tag}.${at.seq}.${at.offset}`;
  }

  /**
   * The position a cursor of this log names; undefined when it is malformed, another log's, or does
   * not fall on the start of a line of a segment still held.
   */
  async position(cursor: string): Promise<Position | 'gone' | undefined> {
    const m = /^([A-Za-z0-9_-]{8})\.([1-9][0-9]{0,14})\.(0|[1-9][0-9]{0,15})$/.exec(cursor);
    if (!m || m[1] !== this.#tag) return undefined;
    const at: Position = { seq: Number(m[2]), offset: Number(m[3]) };
    const segments = await this.#snapshot();
    const seg = segments.find((s) => s.seq === at.seq);
    if (!seg) {
      // A segment older than all held ones was dropped by retention: nothing before it is left.
      return segments.length > 0 && at.seq < segments[0]!.seq ? 'gone' : undefined;
    }
    if (at.offset > seg.bytes) return undefined;
    if (at.offset === 0) return at;
    let boundary = false;
    await this.#withSegment(seg.seq, async (fh) => {
      const one = Buffer.alloc(1);
      boundary = (await readFully(fh, one, 1, at.offset - 1)) === 1 && one[0] === NEWLINE;
    });
    return boundary ? at : undefined;
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

  /**
   * The segments and how many bytes of each are written, once what was queued before is written.
   * Bytes written later are not part of the snapshot, so a reader never sees half a batch.
   */
  async #snapshot(): Promise<Segment[]> {
    await this.whenWritten();
    return this.#exclusive(async () => {
      try {
        await this.#prepareOnce();
      } catch (err) {
        // Reading does not need the repair; the next append retries it (and reports a failure there).
        this.#logger.warn(`jsonl log: could not check the tail of ${this.file}`, {
          file: this.file,
          code: errnoCode(err),
        });
        return [];
      }
      return [...this.#rotated, { seq: this.#activeSeq, bytes: this.#activeBytes }];
    });
  }

  /**
   * Runs `fn` with a read handle on a segment. The handle is opened under the lock, so a rotation
   * cannot rename the file between naming and opening it; after that the handle follows the file.
   * A segment deleted meanwhile is skipped.
   */
  async #withSegment(seq: number, fn: (fh: FileHandle) => Promise<void>): Promise<void> {
    let fh: FileHandle;
    try {
      fh = await this.#exclusive(() => open(this.#segmentPath(seq), 'r'));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw err;
    }
    try {
      await fn(fh);
    } finally {
      await fh.close();
    }
  }

  #segmentPath(seq: number): string {
    return seq === this.#activeSeq ? this.file : `${this.file}.${seq}`;
  }

  /** The first line of a segment, when it is a record and short. */
  async #firstLine(fh: FileHandle, size: number): Promise<T | undefined> {
    const buf = Buffer.allocUnsafe(Math.min(size, 64 * 1024));
    const got = await readFully(fh, buf, buf.length, 0);
    const nl = buf.subarray(0, got).indexOf(NEWLINE);
    return nl < 0 ? undefined : this.#parseLine({ offset: 0, bytes: buf.subarray(0, nl) });
  }

  #schedule(): void {
    if (this.#draining) return;
    this.#draining = new Promise((resolve) =>
      this.#res.rounds.inNextRound(() => void this.#drain().then(resolve, resolve)),
    );
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
    const buffer = this.#res.buffers.pop() ?? Buffer.allocUnsafeSlow(WRITE_BUFFER_BYTES);
    try {
      await this.#prepareOnce();
      // A batch that does not fit one buffer goes out in several writes, in order.
      let used = 0;
      for (let i = 0; i < batch.length; i++) {
        const line = batch[i]!.line;
        if (line === BARRIER) continue;
        const size = jsonLineBytes(line) + 1;
        if (this.#activeHasRecords && this.#activeBytes + used + size > this.#segmentBytes) {
          if (used > 0) await this.#appendData(buffer.subarray(0, used));
          done = this.#settle(batch, done, i);
          used = 0;
          await this.#rotate();
        }
        if (this.#activeBytes + used === 0 && this.#header) {
          const header = encodeLine(toJsonLine(this.#header()));
          if (header.length <= buffer.length) used = header.copy(buffer, 0);
          else await this.#appendData(header);
        }
        this.#activeHasRecords = true;
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
      const lost = batch.slice(done).filter((p) => p.line !== BARRIER).length;
      this.#logger.error(`jsonl log: write to ${this.file} failed`, {
        file: this.file,
        records: lost,
        code: errnoCode(err),
      });
      for (let i = done; i < batch.length; i++) batch[i]!.reject?.(err);
    } finally {
      if (this.#res.buffers.length < POOLED_BUFFERS) this.#res.buffers.push(buffer);
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
    if (!this.#handle && this.#res.keptHandles < this.#res.maxKeptHandles) {
      try {
        this.#handle = await open(this.file, 'a', 0o600);
        this.#res.keptHandles++;
      } catch {
        // Fall back to appendFile, which also recreates a vanished directory below.
      }
    }
    if (this.#handle) {
      const fd = this.#handle.fd;
      await new Promise<void>((resolve, reject) => writeAll(fd, data, (err) => (err ? reject(err) : resolve())));
      this.#activeBytes += data.length;
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
      if (errnoCode(err) !== 'ENOENT') throw err;
      // The directory vanished under us; recreate it once and retry.
      await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
      this.#writes++;
      await appendFile(this.file, data, { mode: 0o600 });
    }
    this.#activeBytes += data.length;
  }

  async #release(): Promise<void> {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    const handle = this.#handle;
    if (!handle) return;
    this.#handle = undefined;
    this.#res.keptHandles--;
    await handle.close();
  }

  /** Makes the active segment a rotated one, then drops the oldest segments past the retention. */
  async #rotate(): Promise<void> {
    await this.#release();
    // A segment left by someone else is never overwritten: the active one takes the next free number.
    while (await exists(`${this.file}.${this.#activeSeq}`)) this.#activeSeq++;
    try {
      await rename(this.file, `${this.file}.${this.#activeSeq}`);
      this.#rotated.push({ seq: this.#activeSeq, bytes: this.#activeBytes });
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
    this.#activeSeq++;
    this.#activeBytes = 0;
    this.#activeHasRecords = false;
    let total = this.#rotated.reduce((n, s) => n + s.bytes, 0);
    // The newest rotated segment stays whatever its size: it holds the newest acknowledged lines.
    while (this.#rotated.length > 1 && total + this.#segmentBytes > this.#retainBytes) {
      const oldest = this.#rotated.shift()!;
      total -= oldest.bytes;
      try {
        await unlink(`${this.file}.${oldest.seq}`);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') {
          this.#logger.warn(`jsonl log: could not delete the old segment ${this.file}.${oldest.seq}`, {
            file: this.file,
            code: errnoCode(err),
          });
        }
      }
    }
  }

  #prepareOnce(): Promise<void> {
    if (!this.#prepared) {
      this.#prepared = this.#prepare().catch((err: unknown) => {
        this.#prepared = undefined; // try again next time
        throw err;
      });
    }
    return this.#prepared;
  }

  /** Finds the segments on disk and repairs the tail of the active one. */
  async #prepare(): Promise<void> {
    let seqs = this.#knownSegments;
    if (seqs === undefined) {
      const base = path.basename(this.file);
      let names: string[] = [];
      try {
        names = await readdir(path.dirname(this.file));
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
      seqs = names.map((n) => segmentSeq(n, base)).filter((s): s is number => s !== undefined);
    }
    const rotated: Segment[] = [];
    for (const seq of [...seqs].sort((a, b) => a - b)) {
      try {
        rotated.push({ seq, bytes: (await stat(`${this.file}.${seq}`)).size });
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
    }
    const size = await repairTail(this.file, this.#logger, (line) => this.#parseLine(line, true) !== undefined);
    this.#rotated = rotated;
    this.#activeSeq = rotated.length > 0 ? rotated[rotated.length - 1]!.seq + 1 : 1;
    this.#activeBytes = size;
    this.#activeHasRecords = size > 0;
  }

  /** The line's record; an empty line is skipped quietly, anything else unreadable with a warning. */
  #parseLine(line: Line, quiet = false): T | undefined {
    if (line.bytes.length === 0) return undefined;
    try {
      const value: unknown = JSON.parse(line.bytes.toString('utf8'));
      if (isRecord(value)) return value as T;
    } catch {
      // reported below
    }
    if (!quiet && line.bytes.toString('utf8').trim() !== '') {
      this.#logger.warn(`jsonl log: skipped an unparseable line in ${this.file}`, {
        file: this.file,
        offset: line.offset,
      });
    }
    return undefined;
  }
}
