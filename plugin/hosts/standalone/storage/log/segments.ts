// Segments and retention of one log: the newest ("active") segment is the file itself; once it holds
// `segmentBytes` it is renamed "<file>.<seq>" and a fresh file is started. Past `retainBytes` in all
// the oldest segments are deleted, never the active one nor the newest full one, so the newest
// acknowledged lines always stay. The log calls these under its lock.
import { readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../../../host.ts';
import { errnoCode } from '../../../../util/errors.ts';

/** A segment and how many of its bytes are written. */
export interface Segment {
  seq: number;
  bytes: number;
}

/** "<file>.<seq>" -> seq, for the rotated segments of `base`. */
export function segmentSeq(name: string, base: string): number | undefined {
  if (!name.startsWith(base + '.')) return undefined;
  const rest = name.slice(base.length + 1);
  if (!/^[1-9][0-9]{0,14}$/.test(rest)) return undefined;
  return Number(rest);
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

export class Segments {
  /** Rotated segments, oldest first (known once found). */
  #rotated: Segment[] = [];
  /** The number the active segment gets when it is rotated. */
  activeSeq = 1;
  activeBytes = 0;
  /** Whether the active segment holds a record besides its header. */
  activeHasRecords = false;

  constructor(
    readonly file: string,
    private readonly logger: Logger,
    readonly segmentBytes: number,
    private readonly retainBytes: number,
    /** Sequence numbers of the rotated segments on disk, when the caller has listed the directory. */
    private readonly known: readonly number[] | undefined,
  ) {}

  /** Every segment held, oldest first, with the bytes written so far. */
  list(): Segment[] {
    return [...this.#rotated, { seq: this.activeSeq, bytes: this.activeBytes }];
  }

  path(seq: number): string {
    return seq === this.activeSeq ? this.file : `${this.file}.${seq}`;
  }

  /** Finds the rotated segments on disk; the active one holds `activeSize` bytes (its tail repaired). */
  async find(activeSize: () => Promise<number>): Promise<void> {
    let seqs = this.known;
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
    const size = await activeSize();
    this.#rotated = rotated;
    this.activeSeq = rotated.length > 0 ? rotated[rotated.length - 1]!.seq + 1 : 1;
    this.activeBytes = size;
    this.activeHasRecords = size > 0;
  }

  /** Makes the active segment a rotated one (its handle closed), then drops the oldest past the retention. */
  async rotate(): Promise<void> {
    // A segment left by someone else is never overwritten: the active one takes the next free number.
    while (await exists(`${this.file}.${this.activeSeq}`)) this.activeSeq++;
    try {
      await rename(this.file, `${this.file}.${this.activeSeq}`);
      this.#rotated.push({ seq: this.activeSeq, bytes: this.activeBytes });
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
    this.activeSeq++;
    this.activeBytes = 0;
    this.activeHasRecords = false;
    let total = this.#rotated.reduce((n, s) => n + s.bytes, 0);
    // The newest rotated segment stays whatever its size: it holds the newest acknowledged lines.
    while (this.#rotated.length > 1 && total + this.segmentBytes > this.retainBytes) {
      const oldest = this.#rotated.shift()!;
      total -= oldest.bytes;
      try {
        await unlink(`${this.file}.${oldest.seq}`);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') {
          this.logger.warn(`jsonl log: could not delete the old segment ${this.file}.${oldest.seq}`, {
            file: this.file,
            code: errnoCode(err),
          });
        }
      }
    }
  }
}
