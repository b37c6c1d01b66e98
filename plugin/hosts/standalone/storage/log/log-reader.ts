// Reading a log back: every record, the tail, the newest header, backwards with a search, pages, and
// cursors for clients. Nothing reads a whole file at once: lines come in bounded chunks
// (line-reader.ts), backwards from the end for pages. Reads see the segments as a snapshot taken once
// what was queued before is written, so a reader never sees half a batch.
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../../../host.ts';
import { linesBackward, linesForward, readFully, type Line } from './line-reader.ts';
import type { Segment } from './segments.ts';

const NEWLINE = 0x0a;

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

/** What a reader needs of its log. */
export interface ReadSource {
  readonly file: string;
  readonly logger: Logger;
  readonly segmentBytes: number;
  /** The segments and their written bytes, once what was queued before is written. */
  snapshot(): Promise<Segment[]>;
  /** Runs `fn` with a read handle on a segment; a segment deleted meanwhile is skipped. */
  withSegment(seq: number, fn: (fh: FileHandle) => Promise<void>): Promise<void>;
}

export function isRecord(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class LogReader<T extends object> {
  /** Tells this log's cursors from another's (made when first needed: most logs never page). */
  #tagText: string | undefined;

  constructor(private readonly src: ReadSource) {}

  /**
   * Every record of every segment, oldest first, once the ones queued before are written. It holds
   * them all in memory: for tests and small logs; the gateway reads pages and tails.
   */
  async readAll(): Promise<T[]> {
    const records: T[] = [];
    const segments = await this.src.snapshot();
    for (const seg of segments) {
      await this.src.withSegment(seg.seq, async (fh) => {
        for await (const line of linesForward(fh, 0, seg.bytes)) {
          const record = this.parse(line);
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
  async scanTail(visit: (records: T[]) => void, windowBytes = this.src.segmentBytes): Promise<void> {
    const segments = (await this.src.snapshot()).slice(-2);
    for (const seg of segments) {
      await this.src.withSegment(seg.seq, async (fh) => {
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
          const record = this.parse(line);
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
    const segments = await this.src.snapshot();
    for (let i = segments.length - 1; i >= 0; i--) {
      const seg = segments[i]!;
      if (seg.bytes === 0) continue;
      let head: T | undefined;
      let found = false;
      await this.src.withSegment(seg.seq, async (fh) => {
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
    const segments = await this.src.snapshot();
    for (let i = segments.length - 1; i >= 0; i--) {
      const seg = segments[i]!;
      let more = true;
      await this.src.withSegment(seg.seq, async (fh) => {
        for await (const line of linesBackward(fh, seg.bytes)) {
          if (needle && line.bytes.indexOf(needle) < 0) continue;
          const record = this.parse(line);
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
    const segments = await this.src.snapshot();
    const found: { record: R; at: Position }[] = [];
    let bytes = 0;
    let full = false;
    for (let i = segments.length - 1; i >= 0 && !full; i--) {
      const seg = segments[i]!;
      if (before && seg.seq > before.seq) continue;
      const end = before && seg.seq === before.seq ? before.offset : seg.bytes;
      await this.src.withSegment(seg.seq, async (fh) => {
        for await (const line of linesBackward(fh, end)) {
          const record = this.parse(line);
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
    return (this.#tagText ??= createHash('sha256')
      .update(path.basename(this.src.file))
      .digest('base64url')
      .slice(0, 8));
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
    const segments = await this.src.snapshot();
    const seg = segments.find((s) => s.seq === at.seq);
    if (!seg) {
      // A segment older than all held ones was dropped by retention: nothing before it is left.
      return segments.length > 0 && at.seq < segments[0]!.seq ? 'gone' : undefined;
    }
    if (at.offset > seg.bytes) return undefined;
    if (at.offset === 0) return at;
    let boundary = false;
    await this.src.withSegment(seg.seq, async (fh) => {
      const one = Buffer.alloc(1);
      boundary = (await readFully(fh, one, 1, at.offset - 1)) === 1 && one[0] === NEWLINE;
    });
    return boundary ? at : undefined;
  }

  /** The first line of a segment, when it is a record and short. */
  async #firstLine(fh: FileHandle, size: number): Promise<T | undefined> {
    const buf = Buffer.allocUnsafe(Math.min(size, 64 * 1024));
    const got = await readFully(fh, buf, buf.length, 0);
    const nl = buf.subarray(0, got).indexOf(NEWLINE);
    return nl < 0 ? undefined : this.parse({ offset: 0, bytes: buf.subarray(0, nl) });
  }

  /** The line's record; an empty line is skipped quietly, anything else unreadable with a warning. */
  parse(line: Line, quiet = false): T | undefined {
    if (line.bytes.length === 0) return undefined;
    try {
      const value: unknown = JSON.parse(line.bytes.toString('utf8'));
      if (isRecord(value)) return value as T;
    } catch {
      // reported below
    }
    if (!quiet && line.bytes.toString('utf8').trim() !== '') {
      this.src.logger.warn(`jsonl log: skipped an unparseable line in ${this.src.file}`, {
        file: this.src.file,
        offset: line.offset,
      });
    }
    return undefined;
  }
}
