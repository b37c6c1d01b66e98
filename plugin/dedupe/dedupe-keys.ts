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

const scoped = (scope: string, key: string): string => `${scope}\u0000${key}`;

/** Only what a duplicate needs is kept (not the scope and key a host's record also carries). */
const firstAnswer = (a: FirstAnswer): FirstAnswer =>
  a.body ? { at: a.at, status: a.status, body: a.body } : { at: a.at, status: a.status };

export class DedupeKeys {
  /** Insertion order is time order: answers arrive with `at` = now, or restored oldest first. */
  readonly #answers = new Map<string, FirstAnswer>();
  /** Keys in the order they were added; a head index instead of shift() keeps removal O(1). */
  #order: { id: string; answer: FirstAnswer }[] = [];
  #head = 0;
  readonly #inFlight = new Map<string, InFlight>();

  constructor(
    private readonly limits: () => DedupeLimits,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#answers.size;
  }

  /** The first answer for this key, or its pending request; undefined when the key is new. */
  seen(scope: string, key: string): Seen | undefined {
    const id = scoped(scope, key);
    const flight = this.#inFlight.get(id);
    if (flight) return { pending: flight.wait() };
    const answer = this.#answers.get(id);
    if (!answer) return undefined;
    if (answer.at <= this.now() - this.limits().windowMs) {
      this.#answers.delete(id);
      return undefined;
    }
    return { answer };
  }

  /** Marks the key as under way; duplicates wait on it. Call only after seen() said it is new. */
  claim(scope: string, key: string): Claim {
    const id = scoped(scope, key);
    const flight = new InFlight((answer) => {
      this.#inFlight.delete(id);
      if (answer) this.#add(id, firstAnswer(answer));
    });
    this.#inFlight.set(id, flight);
    return flight;
  }

  /** Keys recorded by an earlier process, oldest first; those outside the window are skipped. */
  restore(records: Iterable<IdempotencyRecord>): void {
    const oldest = this.now() - this.limits().windowMs;
    for (const r of records) {
      if (r.at > oldest) this.#add(scoped(r.scope, r.key), firstAnswer(r));
    }
  }

  #add(id: string, answer: FirstAnswer): void {
    if (this.#answers.has(id)) this.#answers.delete(id);
    this.#answers.set(id, answer);
    this.#order.push({ id, answer });
    this.#evict();
  }

  /** Oldest first: past maxKeys, or past the window. */
  #evict(): void {
    const { maxKeys, windowMs } = this.limits();
    const oldest = this.now() - windowMs;
    while (this.#head < this.#order.length) {
      const { id, answer } = this.#order[this.#head]!;
      // A key removed, or added again since, has a newer place in the order: this one is stale.
      const live = this.#answers.get(id) === answer;
      if (live && this.#answers.size <= maxKeys && answer.at > oldest) break;
      if (live) this.#answers.delete(id);
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
