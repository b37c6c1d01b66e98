// The keys seen within hooks.dedupe.windowSeconds, each with the answer its first request got and
// the hash of its body; and the requests under way, so that a duplicate that arrives while the first
// is in flight waits for its answer instead of acting again. At most maxKeys are kept, shared fairly
// between scopes (wake, agent, each mapping): when the store is full, a scope holding more than its
// share (maxKeys ÷ the scopes holding keys) loses its own oldest key, else the largest scope does;
// so one sender flooding fresh keys never pushes out another's keys within their share.
import type { Outcome } from '../action.ts';
import type { IdempotencyRecord, Logger } from '../host.ts';
import { otherBody, parseBodyHash, type BodyHash } from './body-hash.ts';
import { LimitedWarning } from './limited-warning.ts';
import { ScopeKeys, type FirstAnswer } from './scope-keys.ts';

export type { FirstAnswer };

export interface DedupeLimits {
  windowMs: number;
  maxKeys: number;
}

/** A request that holds a key until it has an answer. */
export interface Claim {
  /** The first request succeeded: its answer is what duplicates get. */
  settle(answer: FirstAnswer): void;
  /** It failed: nothing is kept, so a retry is processed. */
  release(failure: unknown): void;
  /** After settle: the answer became final (a waited run ended); duplicates get it from now on. */
  amend(answer: FirstAnswer): void;
}

/** A claim on this instance's keys. */
export interface LocalClaim extends Claim {
  /** Answers the requests waiting on it, keeping nothing: the key's answer lives elsewhere and may change. */
  pass(answer: FirstAnswer): void;
}

/**
 * What a repeated key gets: the first answer, now or once the first request has one; or `reused`
 * when its first request had another body.
 */
export type Seen = { answer: FirstAnswer } | { pending: Promise<FirstAnswer> } | { reused: true };

const REUSED: Seen = Object.freeze({ reused: true as const });

/** All scopes' expired keys are looked for at most this often (each scope's own at every add). */
const SWEEP_MS = 1000;

/** A request under way; the promise is made only if a duplicate comes to wait for it. */
class InFlight implements LocalClaim {
  #promise: Promise<FirstAnswer> | undefined;
  #resolve: ((a: FirstAnswer) => void) | undefined;
  #reject: ((err: unknown) => void) | undefined;

  constructor(
    readonly hash: BodyHash | undefined,
    private readonly done: (answer: FirstAnswer | undefined) => void,
    readonly amend: (answer: FirstAnswer) => void,
  ) {}

  get hi(): number | undefined {
    return this.hash?.hi;
  }

  get lo(): number | undefined {
    return this.hash?.lo;
  }

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

  pass(answer: FirstAnswer): void {
    this.done(undefined);
    this.#resolve?.(answer);
  }

  release(failure: unknown): void {
    this.done(undefined);
    this.#reject?.(failure);
  }
}

export class DedupeKeys {
  readonly #scopes = new Map<string, ScopeKeys>();
  #size = 0;
  #sweptAt = 0;
  /** Requests under way, per scope and key. */
  readonly #inFlight = new Map<string, Map<string, InFlight>>();
  readonly #earlyEvictions: LimitedWarning;

  constructor(
    private readonly limits: () => DedupeLimits,
    logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.#earlyEvictions = new LimitedWarning(
      logger,
      'dedupe keys evicted before their window ended: the scope holds more fresh keys than its share of hooks.dedupe.maxKeys',
      now,
    );
  }

  get size(): number {
    return this.#size;
  }

  /**
   * The first answer for this key, or its pending request; `reused` when that request's body had
   * another hash than `hash`; undefined when the key is new.
   */
  seen(scope: string, key: string, hash?: BodyHash): Seen | undefined {
    const flight = this.#inFlight.get(scope)?.get(key);
    if (flight) return otherBody(flight, hash) ? REUSED : { pending: flight.wait() };
    const keys = this.#scopes.get(scope);
    const place = keys?.placeOf(key);
    if (place === undefined) return undefined;
    if (keys!.at(place) <= this.now() - this.limits().windowMs) {
      keys!.delete(key);
      this.#size--;
      if (keys!.size === 0) this.#scopes.delete(scope);
      return undefined;
    }
    return otherBody(keys!.hashAt(place), hash) ? REUSED : { answer: keys!.answer(place) };
  }

  /** Marks the key as under way; duplicates wait on it. Call only after seen() said it is new. */
  claim(scope: string, key: string, hash?: BodyHash): LocalClaim {
    let flights = this.#inFlight.get(scope);
    if (!flights) this.#inFlight.set(scope, (flights = new Map()));
    const flight = new InFlight(
      hash,
      (answer) => {
        flights.delete(key);
        if (flights.size === 0) this.#inFlight.delete(scope);
        if (answer) this.#add(scope, key, answer, hash);
      },
      (answer) => this.#amend(scope, key, answer),
    );
    flights.set(key, flight);
    return flight;
  }

  /** Keys recorded by an earlier process, oldest first; those outside the window are skipped. */
  restore(records: Iterable<IdempotencyRecord>): void {
    const oldest = this.now() - this.limits().windowMs;
    for (const r of records) {
      if (r.at > oldest) this.#add(r.scope, r.key, r, parseBodyHash(r.bodyHash));
    }
  }

  /** The kept answer of the same first request (same time) takes the final one; a key gone stays gone. */
  #amend(scope: string, key: string, answer: FirstAnswer): void {
    const keys = this.#scopes.get(scope);
    const place = keys?.placeOf(key);
    if (place === undefined || keys!.at(place) !== answer.at) return;
    keys!.amend(place, answer);
  }

  #add(scope: string, key: string, answer: FirstAnswer, hash: BodyHash | undefined): void {
    let keys = this.#scopes.get(scope);
    if (!keys) this.#scopes.set(scope, (keys = new ScopeKeys(scope)));
    // Added again: the key moves to the newest place.
    if (keys.placeOf(key) !== undefined) this.#size--;
    keys.add(key, answer, hash);
    this.#size++;
    this.#makeRoom(keys);
  }

  /** Expired keys go; past maxKeys, one key at a time from the scope #victim() picks. */
  #makeRoom(adding: ScopeKeys): void {
    const { maxKeys, windowMs } = this.limits();
    const now = this.now();
    const oldest = now - windowMs;
    this.#dropExpired(adding, oldest);
    if (this.#size <= maxKeys) return;
    if (now - this.#sweptAt >= SWEEP_MS) {
      this.#sweptAt = now;
      for (const keys of this.#scopes.values()) this.#dropExpired(keys, oldest);
    }
    while (this.#size > maxKeys) {
      const victim = this.#victim(adding, maxKeys);
      const goneAt = victim.oldestAt()!;
      victim.removeOldest();
      this.#size--;
      if (victim.size === 0) this.#scopes.delete(victim.name);
      if (goneAt > oldest) this.#earlyEvictions.note(victim.name, { scope: victim.name, kept: victim.size });
    }
  }

  /** The scope that adds, when it holds more than its share; else the one holding the most. */
  #victim(adding: ScopeKeys, maxKeys: number): ScopeKeys {
    if (adding.size > Math.floor(maxKeys / this.#scopes.size)) return adding;
    let largest = adding;
    for (const keys of this.#scopes.values()) if (keys.size > largest.size) largest = keys;
    return largest;
  }

  #dropExpired(keys: ScopeKeys, oldest: number): void {
    for (let at = keys.oldestAt(); at !== undefined && at <= oldest; at = keys.oldestAt()) {
      keys.removeOldest();
      this.#size--;
    }
    if (keys.size === 0) this.#scopes.delete(keys.name);
  }
}

/** Each first answer's body as duplicates get it, made once (an amended answer has a new body, so a new entry). */
const duplicateBodies = new WeakMap<Record<string, unknown>, Readonly<Record<string, unknown>>>();

/**
 * What a duplicate is answered: the first answer, marked. The marked body is made once per kept
 * answer and frozen, so the answer writer keeps its text too (answers.ts).
 */
export function duplicateOf(first: FirstAnswer): Outcome {
  const { body } = first;
  if (body === undefined) return { status: first.status };
  let marked = duplicateBodies.get(body);
  if (marked === undefined) duplicateBodies.set(body, (marked = Object.freeze({ ...body, duplicate: true })));
  return { status: first.status, body: marked as Record<string, unknown> };
}
