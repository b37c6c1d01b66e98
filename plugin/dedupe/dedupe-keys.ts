// The keys seen within hooks.dedupe.windowSeconds, at most maxKeys of them (the oldest go first),
// each with the answer its first request got; and the requests under way, so that a duplicate that
// arrives while the first is in flight waits for its answer instead of acting again.
import type { Outcome } from '../actions/action.ts';
import type { IdempotencyRecord } from '../host.ts';

export interface DedupeLimits {
  windowMs: number;
  maxKeys: number;
}

/** A request that holds a key until it has an answer. */
export interface Claim {
  /** The first request succeeded: its answer is what duplicates get. */
  settle(record: IdempotencyRecord): void;
  /** It failed: nothing is kept, so a retry is processed. */
  release(failure: unknown): void;
}

/** What a duplicate gets: the first answer, now or once the first request has one. */
export type Seen = { record: IdempotencyRecord } | { pending: Promise<IdempotencyRecord> };

const scoped = (scope: string, key: string): string => `${scope}\u0000${key}`;

export class DedupeKeys {
  /** Insertion order is time order: records arrive with `at` = now, or restored oldest first. */
  readonly #records = new Map<string, IdempotencyRecord>();
  /** Records in the order they were added; a head index instead of shift() keeps removal O(1). */
  #order: { id: string; record: IdempotencyRecord }[] = [];
  #head = 0;
  readonly #inFlight = new Map<string, Promise<IdempotencyRecord>>();

  constructor(
    private readonly limits: () => DedupeLimits,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#records.size;
  }

  /** The first answer for this key, or its pending request; undefined when the key is new. */
  seen(scope: string, key: string): Seen | undefined {
    const id = scoped(scope, key);
    const pending = this.#inFlight.get(id);
    if (pending) return { pending };
    const record = this.#records.get(id);
    if (!record) return undefined;
    if (record.at <= this.now() - this.limits().windowMs) {
      this.#records.delete(id);
      return undefined;
    }
    return { record };
  }

  /** Marks the key as under way; duplicates wait on it. Call only after seen() said it is new. */
  claim(scope: string, key: string): Claim {
    const id = scoped(scope, key);
    let resolve!: (r: IdempotencyRecord) => void;
    let reject!: (err: unknown) => void;
    const pending = new Promise<IdempotencyRecord>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Waiters attach their own handlers; a failure nobody waited for is not unhandled.
    pending.catch(() => {});
    this.#inFlight.set(id, pending);
    return {
      settle: (record) => {
        this.#inFlight.delete(id);
        this.#add(id, record);
        resolve(record);
      },
      release: (failure) => {
        this.#inFlight.delete(id);
        reject(failure);
      },
    };
  }

  /** Keys recorded by an earlier process, oldest first; those outside the window are skipped. */
  restore(records: Iterable<IdempotencyRecord>): void {
    const oldest = this.now() - this.limits().windowMs;
    for (const r of records) if (r.at > oldest) this.#add(scoped(r.scope, r.key), r);
  }

  #add(id: string, record: IdempotencyRecord): void {
    if (this.#records.has(id)) this.#records.delete(id);
    this.#records.set(id, record);
    this.#order.push({ id, record });
    this.#evict();
  }

  /** Oldest first: past maxKeys, or past the window. */
  #evict(): void {
    const { maxKeys, windowMs } = this.limits();
    const oldest = this.now() - windowMs;
    while (this.#head < this.#order.length) {
      const { id, record } = this.#order[this.#head]!;
      // A key removed, or added again since, has a newer place in the order: this one is stale.
      const live = this.#records.get(id) === record;
      if (live && this.#records.size <= maxKeys && record.at > oldest) break;
      if (live) this.#records.delete(id);
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
  }
}

/** What a duplicate is answered: the first answer, marked. */
export function duplicateOf(record: IdempotencyRecord): Outcome {
  return record.body === undefined ? { status: record.status } : { status: record.status, body: { ...record.body, duplicate: true } };
}
