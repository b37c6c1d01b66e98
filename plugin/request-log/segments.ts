// The request log's files: append-only JSON lines in segments under <stateDir>/requests/, one file per
// run of entries (requests-<first seq>.jsonl). Entries are appended in batches gathered over
// WRITE_EVERY_MS, off the answer's path (until written, the index holds them whole); a segment whose entries have all left the log is deleted
// whole, so dropping the oldest never rewrites anything. A failed write is logged once; its entries
// stay in memory and the next write, a while later, starts a new segment (a torn line is never
// appended to). Listed at start, read back after it as a stream (util/state-lines.ts) while the
// gateway already answers, and a page at a time by offset.
import { open, readdir, unlink, mkdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../host.ts';
import { errnoCode, errorMessage } from '../util/errors.ts';
import { readStateLines } from '../util/state-lines.ts';
import { isLoggedRequest, type LoggedRequest } from './entry.ts';

/** An entry's line can be no longer than this (an entry holds no payload: a few hundred bytes). */
const MAX_ENTRY_LINE_BYTES = 64 * 1024;
/** Lines read back in one read when they lie within this many bytes (a page of 1000 is ~0.5 MB). */
const MAX_READ_SPAN = 1024 * 1024;
/** After a failed write, the next is tried this much later; entries wait in memory meanwhile. */
const RETRY_AFTER_FAILURE_MS = 10_000;
/**
 * Entries are gathered this long before their batch is written: one write a turn cost the wake row a
 * write call and a promise per turn (docs/performance.md); a page reads entries not yet written from
 * memory, so only a crash loses them, and the log is not the durable record.
 */
const WRITE_EVERY_MS = 100;
const SEGMENT_NAME = /^requests-(\d{1,15})\.jsonl$/;

export class Segment {
  /** Entries of the log's index on this segment. */
  live = 0;
  constructor(
    readonly first: number,
    readonly file: string,
  ) {}
}

/**
 * The entry's line on disk: `{"seq":…,` then the entry's own JSON (`JSON.stringify(entry)`), so the
 * live tail's serialization serves as the line too, and the entry is never copied to add its number.
 */
export function entryLine(seq: number, json: string): string {
  return json.length > 2 ? `{"seq":${seq},${json.slice(1)}\n` : `{"seq":${seq}}\n`;
}

/** An entry as the log's index holds it: whole until written, then only where its line is. */
export interface Stored {
  readonly seq: number;
  entry: LoggedRequest | undefined;
  /** Its line, when it was already made (from the JSON the live tail sent); gone once written. */
  line?: string | undefined;
  segment: Segment | undefined;
  at: number;
  bytes: number;
  /** Left the index before it was written: not written at all. */
  dropped: boolean;
}

/** The segment being appended to. */
interface Writing {
  segment: Segment;
  handle: FileHandle;
  lines: number;
  bytes: number;
}

export class RequestLogFiles {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #segmentEntries: number;
  readonly #segments: Segment[] = [];
  #current: Writing | undefined;
  #pending: Stored[] = [];
  #scheduled: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  #failing = false;
  #retryAt = 0;
  #closed = false;

  private constructor(dir: string, logger: Logger, segmentEntries: number) {
    this.#dir = dir;
    this.#logger = logger;
    this.#segmentEntries = segmentEntries;
  }

  /** Makes the folder and lists its segments, oldest first; a folder that cannot be used throws. */
  static async open(dir: string, logger: Logger, segmentEntries: number): Promise<RequestLogFiles> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const files = new RequestLogFiles(dir, logger, segmentEntries);
    const names = (await readdir(dir))
      .map((name) => ({ name, match: SEGMENT_NAME.exec(name) }))
      .filter((n) => n.match !== null)
      .map((n) => ({ name: n.name, first: Number(n.match![1]) }))
      .sort((a, b) => a.first - b.first);
    for (const { name, first } of names) files.#segments.push(new Segment(first, path.join(dir, name)));
    return files;
  }

  /**
   * Reads every segment listed at open, oldest first, handing each entry to `onEntry` with where it
   * is; lines that are not entries (a torn tail, a foreign line) are counted in one warning and skipped.
   * Nothing is written before it ends (the log queues its writes until then).
   */
  async load(
    onEntry: (logged: LoggedRequest, seq: number, segment: Segment, at: number, bytes: number) => void,
  ): Promise<void> {
    let unreadable = 0;
    for (const segment of [...this.#segments]) {
      const read = await readStateLines(
        segment.file,
        (text, at, bytes) => {
          const parsed = parseLine(text);
          if (parsed === undefined) unreadable++;
          else {
            const { seq, ...logged } = parsed;
            onEntry(logged, seq, segment, at, bytes);
          }
        },
        MAX_ENTRY_LINE_BYTES,
      );
      unreadable += read.tooLong + (read.torn ? 1 : 0);
    }
    if (unreadable) this.#logger.warn('request log lines unreadable, skipped', { dir: this.#dir, count: unreadable });
  }

  /** Deletes the segments no entry of the index is on any more (but the one being written). */
  sweep(): void {
    while (this.#segments.length && this.#segments[0]!.live === 0 && this.#segments[0] !== this.#current?.segment) {
      const segment = this.#segments.shift()!;
      unlink(segment.file).catch((err: unknown) => {
        if (errnoCode(err) !== 'ENOENT')
          this.#logger.warn('request log segment not deleted', { file: segment.file, reason: errorMessage(err) });
      });
    }
  }

  /** Queues an entry for the next batch; it is written within WRITE_EVERY_MS, never in the caller's turn. */
  write(stored: Stored): void {
    if (this.#closed) return;
    this.#pending.push(stored);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#writing) return;
    const wait = Math.max(this.#retryAt - Date.now(), WRITE_EVERY_MS);
    this.#scheduled = setTimeout(() => this.#run(), wait).unref();
  }

  #run(): void {
    this.#scheduled = undefined;
    this.#writing = this.#flush().finally(() => {
      this.#writing = undefined;
      if (this.#pending.length && !this.#closed) this.#schedule();
    });
  }

  async #flush(): Promise<void> {
    const batch = this.#pending.filter((s) => !s.dropped);
    this.#pending = [];
    let from = 0;
    while (from < batch.length) {
      const current = await this.#segmentFor(batch[from]!.seq);
      if (!current) {
        this.#pending = batch.slice(from).concat(this.#pending);
        return;
      }
      const slice = batch.slice(from, from + (this.#segmentEntries - current.lines));
      from += slice.length;
      const lines = slice.map((s) => s.line ?? entryLine(s.seq, JSON.stringify(s.entry)));
      const text = lines.join('');
      try {
        await current.handle.write(text);
      } catch (err) {
        this.#failed(err);
        // Whatever part of it reached the file is never appended to: the next write starts a segment.
        await this.#retire();
        this.#pending = batch.slice(from - slice.length).concat(this.#pending);
        return;
      }
      let at = current.bytes;
      slice.forEach((stored, i) => {
        const bytes = Buffer.byteLength(lines[i]!);
        if (!stored.dropped) {
          stored.segment = current.segment;
          stored.at = at;
          stored.bytes = bytes;
          stored.entry = undefined;
          stored.line = undefined;
          current.segment.live++;
        }
        at += bytes;
      });
      current.bytes = at;
      current.lines += slice.length;
      if (this.#failing) {
        this.#failing = false;
        this.#logger.info('request log written again');
      }
      if (current.lines >= this.#segmentEntries) await this.#retire();
    }
    this.sweep();
  }

  /** The segment being written, or a new one starting at `seq`; undefined when it cannot be opened. */
  async #segmentFor(seq: number): Promise<Writing | undefined> {
    if (this.#current) return this.#current;
    const segment = new Segment(seq, path.join(this.#dir, `requests-${String(seq).padStart(12, '0')}.jsonl`));
    try {
      const handle = await open(segment.file, 'a', 0o600);
      this.#segments.push(segment);
      this.#current = { segment, handle, lines: 0, bytes: 0 };
      return this.#current;
    } catch (err) {
      this.#failed(err);
      return undefined;
    }
  }

  #failed(err: unknown): void {
    this.#retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
    if (this.#failing) return;
    this.#failing = true;
    this.#logger.error('request log not written; its entries stay in memory until a write succeeds', {
      dir: this.#dir,
      reason: errorMessage(err),
    });
  }

  async #retire(): Promise<void> {
    const current = this.#current;
    this.#current = undefined;
    await current?.handle.close().catch(() => {});
  }

  /** The entries of these stored records, read back from their segments (undefined: gone meanwhile). */
  async read(records: readonly Stored[]): Promise<(LoggedRequest | undefined)[]> {
    const out: (LoggedRequest | undefined)[] = records.map((r) => r.entry);
    const bySegment = new Map<Segment, number[]>();
    records.forEach((r, i) => {
      if (r.entry === undefined && r.segment) {
        const list = bySegment.get(r.segment) ?? [];
        list.push(i);
        bySegment.set(r.segment, list);
      }
    });
    for (const [segment, indexes] of bySegment) {
      let handle: FileHandle;
      try {
        handle = await open(segment.file, 'r');
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') continue;
        throw err;
      }
      try {
        // Lines near each other (a page is mostly one run of them) come in one read.
        indexes.sort((x, y) => records[x]!.at - records[y]!.at);
        for (let from = 0; from < indexes.length;) {
          let to = from + 1;
          while (to < indexes.length && spanOf(records, indexes, from, to) <= MAX_READ_SPAN) to++;
          const first = records[indexes[from]!]!;
          const last = records[indexes[to - 1]!]!;
          const buf = Buffer.alloc(last.at + last.bytes - first.at);
          const { bytesRead } = await handle.read(buf, 0, buf.length, first.at);
          for (const i of indexes.slice(from, to)) {
            const r = records[i]!;
            const start = r.at - first.at;
            const parsed =
              start + r.bytes <= bytesRead ? parseLine(buf.toString('utf8', start, start + r.bytes)) : undefined;
            if (parsed?.seq === r.seq) {
              const { seq: _seq, ...logged } = parsed;
              out[i] = logged;
            }
          }
          from = to;
        }
      } finally {
        await handle.close();
      }
    }
    return out;
  }

  /** Writes what is queued (one more try after a failure), then closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#scheduled) {
      clearTimeout(this.#scheduled);
      this.#scheduled = undefined;
    }
    await this.#writing;
    if (this.#pending.length) {
      this.#retryAt = 0;
      await this.#flush();
    }
    await this.#retire();
  }
}

/** Bytes from the first record's line to the end of the one at `to`. */
function spanOf(records: readonly Stored[], indexes: readonly number[], from: number, to: number): number {
  const last = records[indexes[to]!]!;
  return last.at + last.bytes - records[indexes[from]!]!.at;
}

function parseLine(text: string): (LoggedRequest & { seq: number }) | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isLoggedRequest(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
