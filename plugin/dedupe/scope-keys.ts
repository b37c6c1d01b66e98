// One scope's kept keys, packed: a map from each key to its place, and the places' fields in typed
// arrays (time, status, the body hash's halves) beside two plain arrays (the key, the first answer's
// body). An object per key with a boxed time costs several times the heap (docs/performance.md); a full store holds
// hooks.dedupe.maxKeys of them for the whole window. The places are a ring in the order the keys
// were added, so the oldest is at the head; a key added again, or dropped before its turn, leaves its
// place empty until the head passes it or the ring is resized.
import type { BodyHash } from './body-hash.ts';

/** What a key's first request was answered, and when. */
export interface FirstAnswer {
  at: number;
  status: number;
  body?: Record<string, unknown>;
}

const FIRST_CAPACITY = 16;
/** A ring at most a quarter full is halved, down to this size. */
const SHRINK_ABOVE = 1024;
/** The hash's high half of a key kept without a hash (the halves are 31-bit integers). */
const NO_HASH = -0x80000000;

export class ScopeKeys {
  /** Each key's place in the ring. */
  readonly #places = new Map<string, number>();
  #keys: (string | undefined)[] = new Array<string | undefined>(FIRST_CAPACITY);
  #bodies: (Record<string, unknown> | undefined)[] = new Array<Record<string, unknown> | undefined>(FIRST_CAPACITY);
  #at = new Float64Array(FIRST_CAPACITY);
  #status = new Uint16Array(FIRST_CAPACITY);
  #hi = new Int32Array(FIRST_CAPACITY);
  #lo = new Int32Array(FIRST_CAPACITY);
  /** The oldest place, and how many places from it are taken (empty ones included). */
  #head = 0;
  #taken = 0;

  constructor(readonly name: string) {}

  get size(): number {
    return this.#places.size;
  }

  /** The key's place, or undefined when it is not kept. */
  placeOf(key: string): number | undefined {
    return this.#places.get(key);
  }

  at(place: number): number {
    return this.#at[place]!;
  }

  /** The first answer kept at a place: a fresh object, so changing it changes nothing kept. */
  answer(place: number): FirstAnswer {
    const body = this.#bodies[place];
    return body === undefined
      ? { at: this.#at[place]!, status: this.#status[place]! }
      : { at: this.#at[place]!, status: this.#status[place]!, body };
  }

  /** The hash kept at a place, as halves (both undefined when kept without one). */
  hashAt(place: number): { hi: number | undefined; lo: number | undefined } {
    const hi = this.#hi[place]!;
    return hi === NO_HASH ? { hi: undefined, lo: undefined } : { hi, lo: this.#lo[place]! };
  }

  /** Adds a key as the newest; a key already kept moves to the newest place. */
  add(key: string, answer: FirstAnswer, hash: BodyHash | undefined): void {
    const old = this.#places.get(key);
    if (old !== undefined) this.#empty(old);
    if (this.#taken === this.#keys.length) this.#resize(Math.max(FIRST_CAPACITY, this.#places.size * 2));
    const place = (this.#head + this.#taken) % this.#keys.length;
    this.#taken++;
    this.#places.set(key, place);
    this.#keys[place] = key;
    this.#write(place, answer);
    this.#hi[place] = hash ? hash.hi : NO_HASH;
    this.#lo[place] = hash ? hash.lo : 0;
  }

  /** A later answer of the same first request (a waited request's final one). */
  amend(place: number, answer: FirstAnswer): void {
    this.#write(place, answer);
  }

  delete(key: string): void {
    const place = this.#places.get(key);
    if (place === undefined) return;
    this.#places.delete(key);
    this.#empty(place);
    this.#shrinkIfSparse();
  }

  /** The oldest key's time, or undefined when none is kept. */
  oldestAt(): number | undefined {
    this.#skipEmpty();
    return this.#taken === 0 ? undefined : this.#at[this.#head]!;
  }

  removeOldest(): void {
    this.#skipEmpty();
    if (this.#taken === 0) return;
    this.#places.delete(this.#keys[this.#head]!);
    this.#empty(this.#head);
    this.#skipEmpty();
    this.#shrinkIfSparse();
  }

  #write(place: number, answer: FirstAnswer): void {
    this.#at[place] = answer.at;
    this.#status[place] = answer.status;
    this.#bodies[place] = answer.body && sharedBody(answer.body);
  }

  #empty(place: number): void {
    this.#keys[place] = undefined;
    this.#bodies[place] = undefined;
  }

  #skipEmpty(): void {
    while (this.#taken > 0 && this.#keys[this.#head] === undefined) {
      this.#head = (this.#head + 1) % this.#keys.length;
      this.#taken--;
    }
  }

  #shrinkIfSparse(): void {
    const capacity = this.#keys.length;
    if (capacity > SHRINK_ABOVE && this.#places.size * 4 <= capacity) this.#resize(capacity / 2);
  }

  /** Copies the kept keys, oldest first, into arrays of `capacity` places; empty places are dropped. */
  #resize(capacity: number): void {
    const keys = new Array<string | undefined>(capacity);
    const bodies = new Array<Record<string, unknown> | undefined>(capacity);
    const at = new Float64Array(capacity);
    const status = new Uint16Array(capacity);
    const hi = new Int32Array(capacity);
    const lo = new Int32Array(capacity);
    let to = 0;
    for (let i = 0; i < this.#taken; i++) {
      const from = (this.#head + i) % this.#keys.length;
      const key = this.#keys[from];
      if (key === undefined) continue;
      keys[to] = key;
      bodies[to] = this.#bodies[from];
      at[to] = this.#at[from]!;
      status[to] = this.#status[from]!;
      hi[to] = this.#hi[from]!;
      lo[to] = this.#lo[from]!;
      this.#places.set(key, to);
      to++;
    }
    this.#keys = keys;
    this.#bodies = bodies;
    this.#at = at;
    this.#status = status;
    this.#hi = hi;
    this.#lo = lo;
    this.#head = 0;
    this.#taken = to;
  }
}

/** Answers kept by their JSON, to be shared; cleared when full, so unique answers cost little. */
const SHARED_BODIES = new Map<string, Record<string, unknown>>();
const SHARED_BODIES_MAX = 256;
/** Longer answers are mostly unique (a run's id, a mapping's reply): not looked for. */
const SHARED_BODY_MAX_CHARS = 200;

/**
 * One object for the equal answers of many keys (every wake with a fresh key is answered the same),
 * frozen: kept answers are only read, and copied when answered again.
 */
function sharedBody(body: Record<string, unknown>): Record<string, unknown> {
  const json = JSON.stringify(body);
  if (json.length > SHARED_BODY_MAX_CHARS) return body;
  const shared = SHARED_BODIES.get(json);
  if (shared) return shared;
  if (SHARED_BODIES.size >= SHARED_BODIES_MAX) SHARED_BODIES.clear();
  const kept = Object.freeze(JSON.parse(json) as Record<string, unknown>);
  SHARED_BODIES.set(json, kept);
  return kept;
}
