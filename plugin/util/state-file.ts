// A durable keyed record file: the live records of one kind (retry schedules, failures, held actions,
// pauses), on disk as JSON lines of upserts and removals. Writes made in the same turn of the event
// loop (or while a write is under way) go out together in one write. The file is read as a stream at
// open (never whole in one string; an over-long line is skipped with a warning) and rewritten with
// the live records only, streamed into a temp file renamed over it, once removed or replaced bytes
// (or lines) outweigh the live ones. A torn last line (a crash mid-write) is dropped at open.
// Memory keeps each record whole, or with `summarize` only a small summary of it: then the record
// stays on disk and `read()` brings it back. Without a path everything lives in memory only.
// With `sync` (the host's FileSync) the lines reach the disk as the host's storage.fsync says:
// under "always" a put settles only once its batch is synced.
import { closeSync, openSync, read as readFd } from 'node:fs';
import { mkdir, open, rename, truncate, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { errnoCode, errorMessage } from './errors.ts';
import type { FileSyncPolicy, Logger, SyncTarget } from '../host.ts';
import { syncDirectory, syncFileData } from './sync-paths.ts';
import { randomHex } from './random-hex.ts';
import { MAX_LINE_BYTES } from './state-lines.ts';
import { parseStateLine, readRecordLines, type StateLine } from './state-records.ts';

export { readStateRecords } from './state-records.ts';

export interface StateFileOptions<T, S> {
  /**
   * What memory keeps of a record (`bytes`: its line on disk); the record itself stays on disk and
   * `read()` brings it back. Default: the whole record, in memory.
   */
  summarize?: (record: T, bytes: number) => S;
  /** Lines longer than this are skipped at open, with one warning. */
  maxLineBytes?: number;
  /**
   * The store's own bounds (records, and bytes of their lines): a file holding more live records is
   * trimmed oldest first as it is read, with one warning, so its size never decides the memory.
   */
  keepAtMost?: { records: number; bytes: number };
  /** When written lines are synced (the host's `fileSync`); default: never, left to the kernel. */
  sync?: FileSyncPolicy;
}

/** A record as its line on disk, encoded once: what it weighs is known before it is put. */
export interface EncodedRecord<T> {
  readonly id: string;
  readonly record: T;
  readonly text: string;
  readonly bytes: number;
}

interface Place {
  at: number;
  bytes: number;
}

/** A put not yet on disk: its record is read from here until then (the object is the put's token). */
interface Unwritten<T> {
  record: T;
  /** Its line; undefined until its batch is written for a put of `putSoon`. */
  text: string | undefined;
}

interface Pending<T> {
  id: string;
  text: string | undefined;
  bytes: number;
  /** The put this line writes; none for a removal. */
  put?: Unwritten<T>;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

/** The file descriptor records are read back through; a rewrite retires it once its reads are done. */
interface Reader {
  fd: number;
  reads: number;
  retired: boolean;
}

/** Dead bytes allowed beyond the live ones before the file is rewritten. */
const SLACK_BYTES = 1024 * 1024;
/** Dead lines allowed beyond the live ones before the file is rewritten. */
const SLACK_LINES = 1000;
/** What a rewrite gathers before each write to the temp file. */
const REWRITE_CHUNK = 1024 * 1024;

export class StateFile<T, S = T> implements SyncTarget {
  readonly #path: string | undefined;
  readonly #sync: FileSyncPolicy | undefined;
  /** Lines written and not yet synced; the directory's entries changed (a new file, a rewrite). */
  #unsynced = false;
  #unsyncedDir = false;
  readonly #logger: Logger;
  readonly #isRecord: (value: unknown) => value is T;
  readonly #summarize: ((record: T, bytes: number) => S) | undefined;
  readonly #maxLineBytes: number;
  readonly #keepAtMost: { records: number; bytes: number } | undefined;
  readonly #records = new Map<string, S>();
  /** Where each live record's line is in the file. */
  readonly #places = new Map<string, Place>();
  readonly #unwritten = new Map<string, Unwritten<T>>();
  #fileBytes = 0;
  #fileLines = 0;
  #liveBytes = 0;
  /** A write failed: the file may lack what memory has, so the next write rewrites it whole. */
  #mustRewrite = false;
  #handle: FileHandle | undefined;
  #reader: Reader | undefined;
  #batch: Pending<T>[] = [];
  /** Each id's last line in the batch not yet taken, where a `putSoon` may replace the record. */
  #lastInBatch = new Map<string, Pending<T>>();
  #waiters: Waiter[] = [];
  #writing: Promise<void> | undefined;
  #scheduled = false;
  #closed = false;

  private constructor(
    file: string | undefined,
    isRecord: (value: unknown) => value is T,
    logger: Logger,
    options: StateFileOptions<T, S>,
  ) {
    this.#path = file;
    this.#isRecord = isRecord;
    this.#logger = logger;
    this.#summarize = options.summarize;
    this.#maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.#keepAtMost = options.keepAtMost;
    this.#sync = options.sync?.tracks ? options.sync : undefined;
  }

  /**
   * Reads the file (if any) and keeps the records `isRecord` accepts; lines it refuses are logged by
   * count and dropped by a rewrite. `path` undefined: memory only.
   */
  static async open<T, S = T>(
    file: string | undefined,
    isRecord: (value: unknown) => value is T,
    logger: Logger,
    options: StateFileOptions<T, S> = {},
  ): Promise<StateFile<T, S>> {
    const state = new StateFile<T, S>(file, isRecord, logger, options);
    if (file !== undefined) await state.#load(file);
    return state;
  }

  /** The live records (or their summaries); change them through put and remove only. */
  get records(): ReadonlyMap<string, S> {
    return this.#records;
  }

  get size(): number {
    return this.#records.size;
  }

  get(id: string): S | undefined {
    return this.#records.get(id);
  }

  /** The whole record: from memory, or read back from disk when memory keeps a summary. */
  async read(id: string): Promise<T | undefined> {
    const unwritten = this.#unwritten.get(id);
    if (unwritten) return unwritten.record;
    if (!this.#summarize) return this.#records.get(id) as T | undefined;
    const place = this.#places.get(id);
    if (!place || !this.#records.has(id)) return undefined;
    const line = parseStateLine((await this.#readAt(place)).toString('utf8'), this.#isRecord);
    return line?.id === id && line.record !== null ? line.record : undefined;
  }

  /** The record as its line on disk, to weigh before `putEncoded`. */
  encode(id: string, record: T): EncodedRecord<T> {
    const text = `${JSON.stringify({ id, r: record } satisfies StateLine)}\n`;
    return { id, record, text, bytes: Buffer.byteLength(text) };
  }

  /** Sets the record; resolves once it is on disk. */
  put(id: string, record: T): Promise<void> {
    return this.putEncoded(this.encode(id, record));
  }

  /** Sets an encoded record; resolves once it is on disk. */
  putEncoded({ id, record, text, bytes }: EncodedRecord<T>): Promise<void> {
    this.#records.set(id, this.#summarize ? this.#summarize(record, bytes) : (record as unknown as S));
    if (this.#path === undefined) {
      // Memory only: a summarized record is never written, so it stays whole here.
      if (this.#summarize) this.#unwritten.set(id, { record, text: '' });
      return Promise.resolve();
    }
    const put: Unwritten<T> = { record, text };
    this.#unwritten.set(id, put);
    return this.#append({ id, text, bytes, put });
  }

  /**
   * Sets the record as `put` does, but its line is made when its batch is written: the puts of one id
   * made while a write is under way make one line (a record changed often, such as a digest, is
   * encoded once per write, not once per change). The record must not change after.
   */
  putSoon(id: string, record: T): Promise<void> {
    if (this.#summarize || this.#path === undefined) return this.put(id, record);
    this.#records.set(id, record as unknown as S);
    const last = this.#lastInBatch.get(id);
    if (last?.put && last.text === undefined) {
      // A new token: a rewrite that copied the record before this put does not count the line as written.
      last.put = { record, text: undefined };
      this.#unwritten.set(id, last.put);
      return this.#append(undefined);
    }
    const put: Unwritten<T> = { record, text: undefined };
    this.#unwritten.set(id, put);
    return this.#append({ id, text: undefined, bytes: 0, put });
  }

  /** Removes the record (nothing when absent); resolves once that is on disk. */
  remove(id: string): Promise<void> {
    if (!this.#records.delete(id)) return Promise.resolve();
    this.#unwritten.delete(id);
    if (this.#path === undefined) return Promise.resolve();
    const text = `${JSON.stringify({ id, del: true } satisfies StateLine)}\n`;
    return this.#append({ id, text, bytes: Buffer.byteLength(text) });
  }

  /** Waits for the writes under way, then closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#writing || this.#batch.length) await (this.#writing ?? this.#flush());
    if (this.#sync) {
      this.#sync.forget(this);
      await this.syncNow();
    }
    await this.#handle?.close();
    this.#handle = undefined;
    this.#retireReader();
  }

  async #load(file: string): Promise<void> {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    if (this.#summarize) this.#reader = { fd: openReader(file), reads: 0, retired: false };
    try {
      await this.#readLines(file);
    } catch (err) {
      this.#retireReader();
      throw err;
    }
  }

  async #readLines(file: string): Promise<void> {
    let trimmed = 0;
    const read = await readRecordLines(
      file,
      this.#isRecord,
      (id, record, at, bytes) => {
        this.#forget(id);
        if (record === null) {
          this.#records.delete(id);
          return;
        }
        this.#records.set(id, this.#summarize ? this.#summarize(record, bytes) : (record as unknown as S));
        this.#places.set(id, { at, bytes });
        this.#liveBytes += bytes;
        trimmed += this.#trim();
      },
      this.#maxLineBytes,
    );
    this.#fileBytes = read.bytes;
    this.#fileLines = read.lines;
    // A last line cut by a crash never resolved its write: it is one of these, dropped by the rewrite.
    const unreadable = read.refused + (read.torn ? 1 : 0);
    if (unreadable) this.#logger.warn('state file lines unreadable, dropped', { file, count: unreadable });
    if (read.tooLong) {
      this.#logger.warn('state file lines too long, skipped', {
        file,
        count: read.tooLong,
        maxLineBytes: this.#maxLineBytes,
      });
    }
    if (trimmed) {
      this.#logger.warn('state file holds more than its store keeps, oldest records dropped', {
        file,
        count: trimmed,
      });
    }
    if (
      trimmed ||
      read.refused ||
      read.tooLong ||
      this.#outweighed(this.#fileBytes, this.#fileLines, this.#liveBytes)
    ) {
      await this.#rewrite();
    } else if (read.torn) {
      // Only a torn tail: cut it off rather than copy every live record.
      await truncate(file, read.bytes);
    }
  }

  /** Drops the oldest records while over keepAtMost; how many went. */
  #trim(): number {
    const cap = this.#keepAtMost;
    let dropped = 0;
    while (cap && this.#records.size > 0 && (this.#records.size > cap.records || this.#liveBytes > cap.bytes)) {
      const oldest = this.#records.keys().next().value as string;
      this.#records.delete(oldest);
      this.#forget(oldest);
      dropped++;
    }
    return dropped;
  }

  /** The live record's line is no longer live. */
  #forget(id: string): void {
    const place = this.#places.get(id);
    if (!place) return;
    this.#liveBytes -= place.bytes;
    this.#places.delete(id);
  }

  #outweighed(fileBytes: number, fileLines: number, liveBytes: number): boolean {
    return (
      fileBytes - liveBytes > liveBytes + SLACK_BYTES ||
      fileLines - this.#records.size > this.#records.size + SLACK_LINES
    );
  }

  /** Adds the line to the batch (none: a `putSoon` that replaced a record in it); resolves once it is written. */
  #append(line: Pending<T> | undefined): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the state file is closed'));
    if (line) {
      this.#batch.push(line);
      this.#lastInBatch.set(line.id, line);
    }
    const done = new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
    if (!this.#scheduled && !this.#writing) {
      this.#scheduled = true;
      queueMicrotask(() => {
        this.#scheduled = false;
        void this.#flush();
      });
    }
    return done;
  }

  /**
   * Writes what is batched in one write; then the next batch, if one gathered meanwhile. Synced as
   * the host's `sync` says (none by default: the promise is then surviving a killed process, not
   * power loss; docs/reference/security.md).
   */
  #flush(): Promise<void> {
    if (this.#writing || this.#batch.length === 0) return this.#writing ?? Promise.resolve();
    const lines = this.#batch;
    const waiters = this.#waiters;
    this.#batch = [];
    this.#waiters = [];
    this.#lastInBatch.clear();
    for (const line of lines) if (line.text === undefined) this.#encodeSoon(line);
    this.#writing = (async () => {
      try {
        if (this.#mustRewrite || this.#outweighedAfter(lines)) {
          // The live records already hold what the batch says: the rewrite makes it durable.
          await this.#rewrite();
          this.#owe(false, true);
        } else {
          // A first write may create the file: its name is owed a sync of the directory.
          const created = this.#fileBytes === 0;
          this.#handle ??= await open(this.#path!, 'a', 0o600);
          await this.#handle.write(lines.map((l) => l.text).join(''));
          this.#written(lines);
          this.#owe(true, created);
        }
        if (this.#sync?.mode === 'always') await this.#syncOwed();
        for (const w of waiters) w.resolve();
      } catch (err) {
        this.#mustRewrite = true;
        this.#logger.error('state file write failed', { file: this.#path, reason: errorMessage(err) });
        for (const w of waiters) w.reject(err);
      } finally {
        this.#writing = undefined;
        if (this.#batch.length) void this.#flush();
      }
    })();
    return this.#writing;
  }

  /** A `putSoon`'s line, made now its batch is written. */
  #encodeSoon(line: Pending<T>): void {
    const { text, bytes } = this.encode(line.id, line.put!.record);
    line.text = text;
    line.bytes = bytes;
    line.put!.text = text;
  }

  /** What the last write left unsynced; under "interval" the next background sync takes it. */
  #owe(data: boolean, dir: boolean): void {
    if (!this.#sync) return;
    if (data) this.#unsynced = true;
    if (dir) this.#unsyncedDir = true;
    this.#sync.written(this);
  }

  /** The background sync (storage.fsync "interval"): a failure is logged, and stays owed. */
  async syncNow(): Promise<void> {
    // Between writes: a rewrite may replace the handle.
    while (this.#writing) await this.#writing.catch(() => undefined);
    try {
      await this.#syncOwed();
    } catch (err) {
      this.#logger.error('state file sync failed', { file: this.#path, code: errnoCode(err) });
      if (!this.#closed) this.#sync?.written(this);
    }
  }

  /** Syncs the written lines and the directory's entries owed a sync (the temp file of a rewrite was synced already). */
  async #syncOwed(): Promise<void> {
    const data = this.#unsynced;
    const dir = this.#unsyncedDir;
    this.#unsynced = false;
    this.#unsyncedDir = false;
    try {
      if (data) await (this.#handle ? this.#handle.datasync() : syncFileData(this.#path!));
      if (dir) await syncDirectory(path.dirname(this.#path!));
    } catch (err) {
      this.#unsynced ||= data;
      this.#unsyncedDir ||= dir;
      throw err;
    }
  }

  /** Whether the file, with these lines appended, would hold more dead than live. */
  #outweighedAfter(lines: readonly Pending<T>[]): boolean {
    let live = this.#liveBytes;
    let bytes = this.#fileBytes;
    const seen = new Set<string>();
    for (const line of lines) {
      if (!seen.has(line.id)) {
        seen.add(line.id);
        live -= this.#places.get(line.id)?.bytes ?? 0;
      }
      // Only the latest put of a record still there is live.
      if (line.put && this.#unwritten.get(line.id) === line.put) live += line.bytes;
      bytes += line.bytes;
    }
    return this.#outweighed(bytes, this.#fileLines + lines.length, live);
  }

  /** Appended: each line's place, and puts now readable from disk. */
  #written(lines: readonly Pending<T>[]): void {
    let at = this.#fileBytes;
    for (const line of lines) {
      this.#forget(line.id);
      if (line.put && this.#unwritten.get(line.id) === line.put) {
        this.#places.set(line.id, { at, bytes: line.bytes });
        this.#liveBytes += line.bytes;
        this.#unwritten.delete(line.id);
      }
      at += line.bytes;
    }
    this.#fileBytes = at;
    this.#fileLines += lines.length;
  }

  /**
   * The live records only, streamed into a temp file renamed over the file (a crash leaves the old
   * file or the new). Puts and removals made meanwhile wait in the next batch.
   */
  async #rewrite(): Promise<void> {
    const file = this.#path!;
    const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomHex(6)}.tmp`);
    const out = await open(temp, 'wx', 0o600);
    const places = new Map<string, Place>();
    const copied: [string, Unwritten<T> | undefined][] = [];
    let bytes = 0;
    let reader: number | undefined;
    try {
      let chunk: Buffer[] = [];
      let chunkBytes = 0;
      for (const id of [...this.#records.keys()]) {
        const unwritten = this.#unwritten.get(id);
        const line = await this.#lineOf(id, unwritten);
        if (line === undefined) continue;
        places.set(id, { at: bytes, bytes: line.length });
        copied.push([id, unwritten]);
        bytes += line.length;
        chunk.push(line);
        chunkBytes += line.length;
        if (chunkBytes >= REWRITE_CHUNK) {
          await out.write(Buffer.concat(chunk));
          chunk = [];
          chunkBytes = 0;
        }
      }
      if (chunkBytes) await out.write(Buffer.concat(chunk));
      await out.sync();
      // Opened before the rename, so it reads the new file whatever the name points at meanwhile.
      if (this.#summarize) reader = openSync(temp, 'r');
      await out.close();
      await rename(temp, file);
    } catch (err) {
      await out.close().catch(() => {});
      if (reader !== undefined) closeSync(reader);
      await unlink(temp).catch(() => {});
      throw err;
    }
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.close();
    // From here on, in one turn: the new places with the reader of the new file.
    this.#retireReader();
    if (reader !== undefined) this.#reader = { fd: reader, reads: 0, retired: false };
    this.#places.clear();
    this.#liveBytes = 0;
    for (const [id, place] of places) {
      // Removed meanwhile: its line is dead already (its removal follows in the next batch).
      if (!this.#records.has(id)) continue;
      this.#places.set(id, place);
      this.#liveBytes += place.bytes;
    }
    for (const [id, unwritten] of copied) {
      if (unwritten && this.#unwritten.get(id) === unwritten) this.#unwritten.delete(id);
    }
    this.#fileBytes = bytes;
    this.#fileLines = places.size;
    this.#mustRewrite = false;
  }

  /** A live record's line for the rewrite: encoded from memory, or copied from the file as it is. */
  async #lineOf(id: string, unwritten: Unwritten<T> | undefined): Promise<Buffer | undefined> {
    if (unwritten) return Buffer.from(unwritten.text ?? this.encode(id, unwritten.record).text);
    if (!this.#summarize) {
      const record = this.#records.get(id);
      return record === undefined ? undefined : Buffer.from(this.encode(id, record as unknown as T).text);
    }
    const place = this.#places.get(id);
    return place && this.#records.has(id) ? this.#readAt(place) : undefined;
  }

  async #readAt(place: Place): Promise<Buffer> {
    const reader = this.#reader;
    if (!reader) throw new Error('the state file is closed');
    reader.reads++;
    try {
      const buffer = Buffer.allocUnsafe(place.bytes);
      let done = 0;
      while (done < place.bytes) {
        const n = await readAt(reader.fd, buffer, done, place.bytes - done, place.at + done);
        if (n === 0) throw new Error('the state file ended before a record it holds');
        done += n;
      }
      return buffer;
    } finally {
      reader.reads--;
      if (reader.retired && reader.reads === 0) closeSync(reader.fd);
    }
  }

  #retireReader(): void {
    const reader = this.#reader;
    this.#reader = undefined;
    if (!reader) return;
    reader.retired = true;
    if (reader.reads === 0) closeSync(reader.fd);
  }
}

/** Opens the file for reading back records, creating it empty when missing. */
function openReader(file: string): number {
  try {
    return openSync(file, 'r');
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
    closeSync(openSync(file, 'a', 0o600));
    return openSync(file, 'r');
  }
}

function readAt(fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    readFd(fd, buffer, offset, length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );
}
