// Durable append-only JSON Lines log with group commit: the writer. Its segments and retention are
// segments.ts, its readers and cursors log-reader.ts, its tail repair tail-repair.ts; one lock here
// serialises them all. The durability contract is in ../README.md; when lines are synced,
// util/file-sync.ts.
import { appendFile, mkdir, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../../../host.ts';
import { errnoCode } from '../../../../util/errors.ts';
import { LogResources } from './log-resources.ts';
import { writeAll } from '../../io/write-all.ts';
import { jsonLineBytes, toJsonLine, writeJsonLine, type JsonLine } from './json-line.ts';
import { isRecord, LogReader, type Page, type Position } from './log-reader.ts';
import { Segments, type Segment } from './segments.ts';
import { repairTail } from './tail-repair.ts';
import type { SyncTarget } from '../../../../util/file-sync.ts';
import { syncDirectory, syncFileData } from '../../../../util/sync-paths.ts';

export { segmentSeq } from './segments.ts';
export { LogResources } from './log-resources.ts';
export type { Page, Position } from './log-reader.ts';

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

/** One line with its newline, for a record too large for a pooled buffer. */
function encodeLine(line: JsonLine): Buffer {
  const data = Buffer.allocUnsafe(jsonLineBytes(line) + 1);
  data[writeJsonLine(line, data, 0)] = NEWLINE;
  return data;
}

export class JsonlLog<T extends object> implements SyncTarget {
  readonly file: string;
  readonly #logger: Logger;
  readonly #res: LogResources;
  readonly #header: (() => object) | undefined;
  readonly #segments: Segments;
  readonly #reader: LogReader<T>;
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
  /** Bytes written to the active segment and not yet synced (tracked unless storage.fsync is never). */
  #unsynced = false;
  /** Directories whose entries changed since the last sync: a new segment's, ones made for the log. */
  #unsyncedDirs = new Set<string>();
  /** The sync under way: one at a time, and a handle is closed only after it. */
  #syncing: Promise<void> | undefined;

  constructor(file: string, logger: Logger, options: LogOptions = {}) {
    this.file = file;
    this.#logger = logger;
    this.#res = options.resources ?? new LogResources();
    this.#header = options.segmentHeader;
    this.#segments = new Segments(
      file,
      logger,
      options.segmentBytes ?? Infinity,
      options.retainBytes ?? Infinity,
      options.segments,
    );
    this.#reader = new LogReader<T>({
      file,
      logger,
      segmentBytes: this.#segments.segmentBytes,
      snapshot: () => this.#snapshot(),
      withSegment: (seq, fn) => this.#withSegment(seq, fn),
    });
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
  readAll(): Promise<T[]> {
    return this.#reader.readAll();
  }

  /** The newest part of the log forwards, in chunks (log-reader.ts). */
  scanTail(visit: (records: T[]) => void, windowBytes?: number): Promise<void> {
    return this.#reader.scanTail(visit, windowBytes);
  }

  /** The first record of the newest segment that has one: its header, when the log writes headers. */
  newestHead(): Promise<T | undefined> {
    return this.#reader.newestHead();
  }

  /** The whole log newest line first, until `visit` returns false (log-reader.ts). */
  scanBackward(visit: (record: T, at: Position) => boolean, needle?: Buffer): Promise<void> {
    return this.#reader.scanBackward(visit, needle);
  }

  /** The newest `limit` records that `keep` accepts, before `before` (log-reader.ts). */
  page<R extends T>(
    keep: (record: T) => record is R,
    limit: number,
    before: Position | undefined,
    maxBytes: number,
  ): Promise<Page<R>> {
    return this.#reader.page(keep, limit, before, maxBytes);
  }

  /** A position as an opaque cursor for clients. */
  cursor(at: Position): string {
    return this.#reader.cursor(at);
  }

  /** The position a cursor of this log names (log-reader.ts). */
  position(cursor: string): Promise<Position | 'gone' | undefined> {
    return this.#reader.position(cursor);
  }

  /** The file of every segment the log knows of: what deleting the log removes (once closed). */
  files(): string[] {
    return this.#segments.list().map((s) => this.#segments.path(s.seq));
  }

  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
    await this.#io;
  }

  async close(): Promise<void> {
    await this.flush();
    await this.#exclusive(() => this.#release());
    this.#res.sync.forget(this);
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
      return this.#segments.list();
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
      fh = await this.#exclusive(() => open(this.#segments.path(seq), 'r'));
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
        if (this.#segments.activeHasRecords && this.#segments.activeBytes + used + size > this.#segments.segmentBytes) {
          if (used > 0) await this.#appendData(buffer.subarray(0, used));
          done = await this.#durable(batch, done, i);
          used = 0;
          await this.#release();
          await this.#segments.rotate();
        }
        if (this.#segments.activeBytes + used === 0 && this.#header) {
          const header = encodeLine(toJsonLine(this.#header()));
          if (header.length <= buffer.length) used = header.copy(buffer, 0);
          else await this.#appendData(header);
        }
        this.#segments.activeHasRecords = true;
        if (used + size > buffer.length && used > 0) {
          await this.#appendData(buffer.subarray(0, used));
          done = await this.#durable(batch, done, i);
          used = 0;
        }
        if (size > buffer.length) {
          await this.#appendData(encodeLine(line));
          done = await this.#durable(batch, done, i + 1);
          continue;
        }
        used = writeJsonLine(line, buffer, used);
        buffer[used++] = NEWLINE;
      }
      if (used > 0) await this.#appendData(buffer.subarray(0, used));
      await this.#durable(batch, done, batch.length);
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

  /**
   * Settles the appends of lines [from, to), now written, once synced under storage.fsync "always"
   * (one sync for the whole batch); returns `to`.
   */
  async #durable(batch: readonly Pending[], from: number, to: number): Promise<number> {
    if (this.#res.sync.mode === 'always') await this.#syncData();
    return this.#settle(batch, from, to);
  }

  /** Settles the appends of lines [from, to), now written; returns `to`. */
  #settle(batch: readonly Pending[], from: number, to: number): number {
    for (let i = from; i < to; i++) batch[i]!.resolve?.();
    return to;
  }

  async #appendData(data: Buffer): Promise<void> {
    if (!this.#dirReady) {
      this.#madeDirs(await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 }));
      this.#dirReady = true;
    }
    // A segment's first bytes create its file (or follow a rotation's rename): its name needs a sync.
    if (this.#segments.activeBytes === 0 && this.#res.sync.tracks) this.#unsyncedDirs.add(path.dirname(this.file));
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
      const { loopWrites } = this.#res;
      if (loopWrites.fits(data.length)) {
        const slowMs = loopWrites.write(fd, data);
        if (slowMs !== undefined)
          this.#logger.warn('jsonl log: a slow write; writing through the thread pool for a while', {
            file: this.file,
            ms: Math.round(slowMs),
          });
      } else await new Promise<void>((resolve, reject) => writeAll(fd, data, (err) => (err ? reject(err) : resolve())));
      this.#segments.activeBytes += data.length;
      this.#wrote();
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
      this.#madeDirs(await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 }));
      if (this.#res.sync.tracks) this.#unsyncedDirs.add(path.dirname(this.file));
      this.#writes++;
      await appendFile(this.file, data, { mode: 0o600 });
    }
    this.#segments.activeBytes += data.length;
    this.#wrote();
  }

  /** Lines reached the file: under storage.fsync they are owed a sync. */
  #wrote(): void {
    if (!this.#res.sync.tracks) return;
    this.#unsynced = true;
    this.#res.sync.written(this);
  }

  /** mkdir made `first` and the directories below it down to the log's: each parent's entry changed. */
  #madeDirs(first: string | undefined): void {
    if (first === undefined || !this.#res.sync.tracks) return;
    for (let dir = path.dirname(this.file); ; dir = path.dirname(dir)) {
      this.#unsyncedDirs.add(path.dirname(dir));
      if (dir === first || path.dirname(dir) === dir) break;
    }
  }

  /**
   * The background sync (storage.fsync "interval"): a failure is logged, and the lines stay owed to
   * the next interval's sync.
   */
  syncNow(): Promise<void> {
    return this.#syncData().catch((err: unknown) => {
      this.#syncFailed(err);
      this.#res.sync.written(this);
    });
  }

  #syncFailed(err: unknown): void {
    this.#logger.error(`jsonl log: sync of ${this.file} failed`, { file: this.file, code: errnoCode(err) });
  }

  /** Syncs what was written and the directory entries that changed; one sync at a time. */
  async #syncData(): Promise<void> {
    // Another caller's failure is theirs to report; this one syncs what is still owed.
    while (this.#syncing) await this.#syncing.catch(() => undefined);
    if (!this.#unsynced && this.#unsyncedDirs.size === 0) return;
    const syncing = this.#syncOnce();
    this.#syncing = syncing;
    try {
      await syncing;
    } finally {
      this.#syncing = undefined;
    }
  }

  async #syncOnce(): Promise<void> {
    const data = this.#unsynced;
    const dirs = [...this.#unsyncedDirs];
    this.#unsynced = false;
    this.#unsyncedDirs.clear();
    try {
      if (data) await (this.#handle ? this.#handle.datasync() : syncFileData(this.file));
      for (const dir of dirs) await syncDirectory(dir);
    } catch (err) {
      // Still owed: the next sync tries again.
      if (data) this.#unsynced = true;
      for (const dir of dirs) this.#unsyncedDirs.add(dir);
      throw err;
    }
  }

  async #release(): Promise<void> {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    // A file is synced before its handle goes (a rotation renames it, an idle log closes it). A
    // failure is logged; what is owed waits for the log's next write.
    if (this.#unsynced || this.#syncing) await this.#syncData().catch((err: unknown) => this.#syncFailed(err));
    const handle = this.#handle;
    if (!handle) return;
    this.#handle = undefined;
    this.#res.keptHandles--;
    await handle.close();
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
  #prepare(): Promise<void> {
    return this.#segments.find(() =>
      repairTail(this.file, this.#logger, (line) => this.#reader.parse(line, true) !== undefined),
    );
  }
}
