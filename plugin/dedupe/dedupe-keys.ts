// The keys seen within hooks.dedupe.windowSeconds, at most maxKeys of them (the oldest go first),
// each with the answer its first request got; and the requests under way, so that a duplicate that
// arrives while the first is in flight waits for its answer instead of acting again.
import type { Outcome } from '../actions/action.ts';
import type { IdempotencyRecord } from '../host.ts';

export interface DedupeLimits {
  windowMs: number;
  maxKeys: number;
}

/** What is kept of a key in memory: when, and what its first request was answered. */
export interface FirstAnswer {
  at: number;
  status: number;
  body?: Record<string, unknown>;
}

/** A request that holds a key until it has an answer. */
export interface Claim {
  /** The first request succeeded: its answer is what duplicates get. */
  settle(answer: FirstAnswer): void;
  /** It failed: nothing is kept, so a retry is processed. */
  release(failure: unknown): void;
}

/** What a duplicate gets: the first answer, now or once the first request has one. */
export type Seen = { answer: FirstAnswer } | { pending: Promise<FirstAnswer> };

/** A request under way; the promise is made only if a duplicate comes to wait for it. */
class InFlight implements Claim {
  #promise: Promise<FirstAnswer> | undefined;
  #resolve: ((a: FirstAnswer) => void) | undefined;
  #reject: ((err: unknown) => void) | undefined;

  constructor(private readonly done: (answer: FirstAnswer | undefined) => void) {}

  wait(): Promise<FirstAnswer> {
    this.#promise ??= new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    return this.#promise;
  }

  settle(answer: FirstAnswer): void {
    this.done(answer);
    this.#resolve?.(answer);
  }

  release(failure: unknown): void {
    this.done(undefined);
    this.#reject?.(failure);
  }
}

/**
 * A key with its first answer, as kept: one small object per key. Keys live in a map per scope, so
 * the key is the sender's own string (a scoped copy would be a second string per key).
 */
class Kept implements FirstAnswer {
  constructor(
    readonly scope: string,
    readonly key: string,
    readonly at: number,
    readonly status: number,
    readonly body: Record<string, unknown> | undefined,
  ) {}
}

export class DedupeKeys {
  /** Per scope, the keys with their first answers. */
  readonly #scopes = new Map<string, Map<string, Kept>>();
  #size = 0;
  /** Keys in the order they were added, oldest first (answers carry `at` = now, or are restored oldest first); a head index instead of shift() keeps removal O(1). */
  #order: Kept[] = [];
  #head = 0;
  /** Requests under way, per scope and key. */
  readonly #inFlight = new Map<string, Map<string, InFlight>>();

  constructor(
    private readonly limits: () => DedupeLimits,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#size;
  }

  /** The first answer for this key, or its pending request; undefined when the key is new. */
  seen(scope: string, key: string): Seen | undefined {
    const flight = this.#inFlight.get(scope)?.get(key);
    if (flight) return { pending: flight.wait() };
    const keys = this.#scopes.get(scope);
    const answer = keys?.get(key);
    if (!answer) return undefined;
    if (answer.at <= this.now() - this.limits().windowMs) {
      keys!.delete(key);
      this.#size--;
      return undefined;
    }
    return { answer };
  }

  /** Marks the key as under way; duplicates wait on it. Call only after seen() said it is new. */
  claim(scope: string, key: string): Claim {
    let flights = this.#inFlight.get(scope);
    if (!flights) this.#inFlight.set(scope, (flights = new Map()));
    const flight = new InFlight((answer) => {
      flights.delete(key);
      if (flights.size === 0) this.#inFlight.delete(scope);
      if (answer) this.#add(scope, key, answer);
    });
    flights.set(key, flight);
    return flight;
  }

  /** Keys recorded by an earlier process, oldest first; those outside the window are skipped. */
  restore(records: Iterable<IdempotencyRecord>): void {
    const oldest = this.now() - this.limits().windowMs;
    for (const r of records) {
      if (r.at > oldest) this.#add(r.scope, r.key, r);
    }
  }

  #add(scope: string, key: string, answer: FirstAnswer): void {
    let keys = this.#scopes.get(scope);
    if (!keys) this.#scopes.set(scope, (keys = new Map()));
    const kept = new Kept(scope, key, answer.at, answer.status, answer.body);
    // Added again: the new entry takes a new place in the order (the old place is skipped as stale).
    if (keys.delete(key)) this.#size--;
    keys.set(key, kept);
    this.#size++;
    this.#order.push(kept);
    this.#evict();
  }

  /** Oldest first: past maxKeys, or past the window. */
  #evict(): void {
    const { maxKeys, windowMs } = this.limits();
    const oldest = this.now() - windowMs;
    while (this.#head < this.#order.length) {
      const kept = this.#order[this.#head]!;
      const keys = this.#scopes.get(kept.scope);
      // A key removed, or added again since, has a newer place in the order: this one is stale.
      const live = keys?.get(kept.key) === kept;
      if (live && this.#size <= maxKeys && kept.at > oldest) break;
      if (live) {
        keys!.delete(kept.key);
        this.#size--;
        if (keys!.size === 0) this.#scopes.delete(kept.scope);
      }
      this.#head++;
    }
    // Entries before the head are dropped once they are a quarter of the array.
    if (this.#head > 1024 && this.#head * 4 > this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
  }
}

/** What a duplicate is answered: the first answer, marked. */
export function duplicateOf(first: FirstAnswer): Outcome {
  return first.body === undefined
    ? { status: first.status }
    : { status: first.status, body: { ...first.body, duplicate: true } };
}
