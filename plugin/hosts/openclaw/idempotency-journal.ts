// Idempotency keys kept durably for the OpenClaw host, in the plugin's state dir: OpenClaw's own event
// queue lives in memory, so the keys get a JSON Lines file of their own, appended before the request
// is answered and compacted to maxKeys within the window once it holds twice that, shared fairly
// between scopes as in memory (one sender's flood of fresh keys cannot push out another's). Keys that
// come while a write is under way go out together in the next one (one append each held every keyed
// request inside OpenClaw behind the ones before it).
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
  /** Records waiting for the next append, with what to tell each one's caller. */
  #batch: { line: string; resolve: () => void; reject: (err: unknown) => void }[] = [];

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

  /** Resolves once the record is on disk, written with the others that came before its batch's turn. */
  append(record: IdempotencyRecord): Promise<void> {
    if (!this.#file) return Promise.reject(new Error('the idempotency journal is not open'));
    const written = new Promise<void>((resolve, reject) =>
      this.#batch.push({ line: `${JSON.stringify(record)}\n`, resolve, reject }),
    );
    // The first record of a batch books its turn; the ones after it join until that turn comes.
    if (this.#batch.length === 1) this.#tail = this.#tail.then(() => this.#writeBatch()).catch(() => undefined);
    return written;
  }

  async #writeBatch(): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    try {
      await appendFile(this.#file!, batch.map((b) => b.line).join(''), { mode: 0o600 });
    } catch (err) {
      for (const b of batch) b.reject(err);
      return;
    }
    for (const b of batch) b.resolve();
    this.#lines += batch.length;
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
