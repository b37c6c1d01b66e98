// Idempotency keys kept durably for the OpenClaw host, in the plugin's state dir: OpenClaw's own event
// queue lives in memory, so the keys get a JSON Lines file of their own, appended before the request
// is answered and compacted to maxKeys within the window once it holds twice that, shared fairly
// between scopes as in memory (one sender's flood of fresh keys cannot push out another's).
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { keepFairly } from '../../host-kit.ts';
import type { IdempotencyRecord } from '../../host.ts';
import { stateFileError } from '../../util/state-file-error.ts';

export interface JournalLimits {
  windowMs: number;
  maxKeys: number;
}

export class IdempotencyJournal {
  #file: string | undefined;
  #lines = 0;
  #limits: JournalLimits = { windowMs: 0, maxKeys: 0 };
  /** Appends and compactions one after another, in order. */
  #tail: Promise<void> = Promise.resolve();

  /** Called by the service once OpenClaw has given it a state dir. */
  async open(stateDir: string): Promise<void> {
    const dir = path.join(stateDir, 'hookgate');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    this.#file = path.join(dir, 'idempotency.jsonl');
  }

  /** The keys within the window, oldest first, at most maxKeys (fairly shared); the file is compacted to them. */
  async restore(limits: JournalLimits): Promise<IdempotencyRecord[]> {
    this.#limits = limits;
    if (!this.#file) return [];
    let text = '';
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw stateFileError(this.#file, err);
    }
    const oldest = Date.now() - limits.windowMs;
    const kept = keepFairly(
      parseLines(text).filter((r) => r.at > oldest),
      limits.maxKeys,
    );
    await this.#rewrite(kept);
    return kept;
  }

  /** Resolves once the record is on disk. */
  append(record: IdempotencyRecord): Promise<void> {
    const file = this.#file;
    if (!file) return Promise.reject(new Error('the idempotency journal is not open'));
    const written = this.#tail.then(() => appendFile(file, `${JSON.stringify(record)}\n`, { mode: 0o600 }));
    this.#tail = written.then(
      () => this.#afterAppend(),
      () => undefined,
    );
    return written;
  }

  async #afterAppend(): Promise<void> {
    this.#lines++;
    if (this.#limits.maxKeys === 0 || this.#lines <= 2 * this.#limits.maxKeys) return;
    await this.restore(this.#limits);
  }

  async #rewrite(records: readonly IdempotencyRecord[]): Promise<void> {
    const file = this.#file!;
    const temp = `${file}.tmp`;
    await writeFile(temp, records.map((r) => `${JSON.stringify(r)}\n`).join(''), { mode: 0o600 });
    await rename(temp, file);
    this.#lines = records.length;
  }
}

function parseLines(text: string): IdempotencyRecord[] {
  const out: IdempotencyRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      const r = JSON.parse(line) as IdempotencyRecord;
      if (
        typeof r.scope === 'string' &&
        typeof r.key === 'string' &&
        typeof r.at === 'number' &&
        typeof r.status === 'number'
      )
        out.push(r);
    } catch {
      // A line torn by a crash is dropped.
    }
  }
  return out;
}
