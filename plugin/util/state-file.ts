// A durable keyed record file: the live records of one kind (retry schedules, failures, held actions,
// pauses), kept in memory and on disk as JSON lines of upserts and removals. Writes made in the same
// turn of the event loop (or while a write is under way) go out together in one write; the file is
// rewritten with the live records only, atomically, when removed or replaced lines outweigh them. A
// torn last line (a crash mid-write) is dropped at open. Without a path it lives in memory only.
import { open, readFile, type FileHandle } from 'node:fs/promises';
import type { Logger } from '../host.ts';
import { writeFileAtomic } from './write-file-atomic.ts';
import { errnoCode, errorMessage } from './errors.ts';
import { stateFileError } from './state-file-error.ts';

type Line = { id: string; r: unknown } | { id: string; del: true };

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

/** Lines beyond the live records' count before the file is rewritten. */
const SLACK_LINES = 1000;

export class StateFile<T> {
  readonly #path: string | undefined;
  readonly #records: Map<string, T>;
  readonly #logger: Logger;
  #handle: FileHandle | undefined;
  #lines: number;
  #batch: string[] = [];
  #waiters: Waiter[] = [];
  #writing: Promise<void> | undefined;
  #scheduled = false;
  #closed = false;

  private constructor(path: string | undefined, records: Map<string, T>, lines: number, logger: Logger) {
    this.#path = path;
    this.#records = records;
    this.#lines = lines;
    this.#logger = logger;
  }

  /**
   * Reads the file (if any) and keeps the records `isRecord` accepts; lines it refuses are logged by
   * count and dropped at the rewrite. `path` undefined: memory only.
   */
  static async open<T>(
    path: string | undefined,
    isRecord: (value: unknown) => value is T,
    logger: Logger,
  ): Promise<StateFile<T>> {
    if (path === undefined) return new StateFile(undefined, new Map<string, T>(), 0, logger);
    const { records, lines, refused } = await readStateRecords(path, isRecord);
    // A last line cut by a crash never resolved its write: it is one of these, dropped by the rewrite.
    if (refused) logger.warn('state file lines unreadable, dropped', { file: path, count: refused });
    const file = new StateFile(path, records, lines, logger);
    await file.#rewrite();
    return file;
  }

  /** The live records; change them through put and remove only. */
  get records(): ReadonlyMap<string, T> {
    return this.#records;
  }

  get size(): number {
    return this.#records.size;
  }

  get(id: string): T | undefined {
    return this.#records.get(id);
  }

  /** Sets the record; resolves once it is on disk. */
  put(id: string, record: T): Promise<void> {
    this.#records.set(id, record);
    return this.#append({ id, r: record });
  }

  /** Removes the record (nothing when absent); resolves once that is on disk. */
  remove(id: string): Promise<void> {
    if (!this.#records.delete(id)) return Promise.resolve();
    return this.#append({ id, del: true });
  }

  /** Waits for the writes under way, then closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#writing || this.#batch.length) await (this.#writing ?? this.#flush());
    await this.#handle?.close();
    this.#handle = undefined;
  }

  #append(line: Line): Promise<void> {
    if (this.#path === undefined) return Promise.resolve();
    if (this.#closed) return Promise.reject(new Error('the state file is closed'));
    this.#batch.push(`${JSON.stringify(line)}\n`);
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
   * Writes what is batched in one write; then the next batch, if one gathered meanwhile. No fsync: the
   * promise is the storage's (plugin/hosts/standalone/storage/README.md), surviving a killed process,
   * not power loss; a sync per batch bounded how fast a paused hook holds (docs/performance.md).
   */
  #flush(): Promise<void> {
    if (this.#writing || this.#batch.length === 0) return this.#writing ?? Promise.resolve();
    const lines = this.#batch;
    const waiters = this.#waiters;
    this.#batch = [];
    this.#waiters = [];
    this.#writing = (async () => {
      try {
        if (this.#lines > 2 * this.#records.size + SLACK_LINES) {
          // The live records already hold what the batch says: the rewrite makes it durable.
          await this.#rewrite();
        } else {
          this.#handle ??= await open(this.#path!, 'a', 0o600);
          await this.#handle.write(lines.join(''));
          this.#lines += lines.length;
        }
        for (const w of waiters) w.resolve();
      } catch (err) {
        this.#logger.error('state file write failed', { file: this.#path, reason: errorMessage(err) });
        for (const w of waiters) w.reject(err);
      } finally {
        this.#writing = undefined;
        if (this.#batch.length) void this.#flush();
      }
    })();
    return this.#writing;
  }

  /** The live records only, replacing the file at once (a crash leaves the old file or the new). */
  async #rewrite(): Promise<void> {
    const out: string[] = [];
    for (const [id, r] of this.#records) out.push(`${JSON.stringify({ id, r })}\n`);
    await this.#handle?.close();
    this.#handle = undefined;
    await writeFileAtomic(this.#path!, out.join(''));
    this.#lines = out.length;
  }
}

/**
 * The live records of a state file as it is on disk, nothing written (a missing file has none);
 * `refused` counts the lines `isRecord` or JSON refused. A file that cannot be read (a directory in
 * its place, one too large) throws a StateFileError naming it: a start cannot go on without it.
 */
export async function readStateRecords<T>(
  path: string,
  isRecord: (value: unknown) => value is T,
): Promise<{ records: Map<string, T>; lines: number; refused: number }> {
  const records = new Map<string, T>();
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw stateFileError(path, err);
  }
  let lines = 0;
  let refused = 0;
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    lines++;
    let line: Partial<Line> & { r?: unknown; del?: unknown };
    try {
      line = JSON.parse(raw) as typeof line;
    } catch {
      refused++;
      continue;
    }
    if (typeof line !== 'object' || line === null || typeof line.id !== 'string') {
      refused++;
    } else if (line.del === true) {
      records.delete(line.id);
    } else if (isRecord(line.r)) {
      records.set(line.id, line.r);
    } else refused++;
  }
  return { records, lines, refused };
}
