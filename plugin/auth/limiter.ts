import { hash, randomBytes } from 'node:crypto';
import { DEFAULTS } from '../config/defaults.ts';

/**
 * Auth-failure limiter keyed by client address key (see clientAddress()).
 *
 * What counts is distinct wrong credentials: a guesser must vary them, while a sender that repeats
 * one (a token just rotated away from, or one it switched to a moment before the reload applied it)
 * is not locked out by its own retries. Each entry keeps salted fingerprints of the wrong credentials
 * of its window, never the credentials, at most one per failure it may count.
 *
 * Window semantics: fixed window anchored at the first failure. The first
 * failure of an address opens a window of `windowSeconds`; failures inside it
 * are counted; the first failure after it has elapsed opens a fresh window
 * with a count of 1. When the count reaches `maxFailures` the address is
 * locked for `lockoutSeconds` and its count resets, so the first failure
 * after the lock opens a new window. (A fixed window lets a client spread up
 * to 2 * (maxFailures - 1) failures across a window boundary without being
 * locked; it needs no per-failure timestamps.)
 *
 * Failures reported while an address is locked are not counted and do not
 * extend the lock (callers check lockedFor() before evaluating the token).
 *
 * Memory: at most `maxEntries` entries, each a small fixed-shape object.
 * Entries sit in a Map (lookup) and on an intrusive doubly-linked list kept
 * in "last failure" order: every failure moves its entry to the tail, so the
 * head is the least recently failing address. (The list is used instead of
 * the Map's own insertion order because V8 leaves deleted slots at the front
 * of a Map's backing store until it rehashes, which makes "first key" lookups
 * O(n) under a delete-head/insert-tail workload.)
 *
 * Expired entries are dropped lazily: on lookup in lockedFor(), and a couple
 * from the head on each recordFailure(). When a new address arrives and the
 * map is full, up to EVICTION_SCAN entries from the head are inspected for an
 * expired one; failing that the head (least recently failing) is evicted.
 * The evicted entry object is reused, so a flood of new addresses at
 * capacity allocates no entries. Every operation is O(1).
 */

export interface AuthRateLimit {
  maxFailures: number;
  windowSeconds: number;
  lockoutSeconds: number;
}

/** Addresses tracked at most. */
const MAX_ENTRIES = 65536;

/** Head entries inspected for an expired one before falling back to LRU. */
const EVICTION_SCAN = 8;
/** Expired head entries dropped per recordFailure(). */
const PRUNE_PER_CALL = 2;

class Entry {
  key: string;
  /** Failures in the current window; 0 means no open window. */
  count = 0;
  /** Fingerprints of the wrong credentials counted in the current window. */
  seen: number[] = [];
  /** ms timestamp of the failure that opened the current window. */
  windowStart = 0;
  /** ms timestamp until which the address is locked (in the past = not locked). */
  lockedUntil = 0;
  /** ms timestamp after which the entry carries no state worth keeping. */
  expiresAt = 0;
  /** Neighbour that failed less recently (towards the head). */
  prev: Entry | undefined = undefined;
  /** Neighbour that failed more recently (towards the tail). */
  next: Entry | undefined = undefined;

  constructor(key: string) {
    this.key = key;
  }
}

function positive(value: number, fallback: number): number {
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/** What a request needs of a limiter: the local one, or the one shared on Redis. */
export type AuthLimiter = Pick<AuthFailureLimiter, 'lockedFor' | 'recordFailure'>;

export class AuthFailureLimiter {
  readonly #entries = new Map<string, Entry>();
  /** Least recently failing entry. */
  #head: Entry | undefined = undefined;
  /** Most recently failing entry. */
  #tail: Entry | undefined = undefined;
  readonly #maxEntries: number;
  readonly #now: () => number;

  readonly #salt = randomBytes(16).toString('hex');
  #lastCounted = false;

  constructor(opts?: { maxEntries?: number; now?: () => number }) {
    const max = opts?.maxEntries ?? MAX_ENTRIES;
    if (!Number.isInteger(max) || max < 1) {
      throw new Error(`AuthFailureLimiter: maxEntries must be a positive integer, got ${String(max)}`);
    }
    this.#maxEntries = max;
    this.#now = opts?.now ?? Date.now;
  }

  /**
   * Seconds until `key` may try again (>= 1, rounded up), or 0 when it is not
   * locked. Drops the entry if it has fully expired.
   */
  lockedFor(key: string): number {
    const entry = this.#entries.get(key);
    if (entry === undefined) return 0;
    const now = this.#now();
    const remaining = entry.lockedUntil - now;
    if (remaining > 0) return Math.ceil(remaining / 1000);
    if (entry.expiresAt <= now) this.#remove(entry);
    return 0;
  }

  /**
   * Records one failed authentication for `key` with the credential it tried (null when it sent
   * none). A credential this address already failed with in the window is not counted again; without
   * `attempt` every failure counts. Returns the lockout in seconds when this failure caused a lock, else 0.
   */
  recordFailure(key: string, limits: AuthRateLimit, attempt?: string | null): number {
    const maxFailures = Math.max(1, Math.floor(positive(limits.maxFailures, DEFAULTS.authRateLimit.maxFailures)));
    const windowMs = positive(limits.windowSeconds, DEFAULTS.authRateLimit.windowSeconds) * 1000;
    // A lockout of 0 is allowed and means "never lock".
    const lockMs =
      Number.isFinite(limits.lockoutSeconds) && limits.lockoutSeconds > 0 ? limits.lockoutSeconds * 1000 : 0;
    const now = this.#now();
    const entries = this.#entries;
    this.#lastCounted = false;

    let entry = entries.get(key);
    if (entry !== undefined) {
      // Move to the tail: this is now the most recently failing address.
      if (entry !== this.#tail) {
        this.#unlink(entry);
        this.#append(entry);
      }
      if (entry.lockedUntil > now) return 0;
      if (entry.count === 0 || now - entry.windowStart >= windowMs) {
        entry.count = 0;
        entry.seen.length = 0;
        entry.windowStart = now;
      }
    } else {
      this.#prune(now);
      entry = this.#claim(key, now);
      entry.count = 0;
      entry.seen.length = 0;
      entry.windowStart = now;
      entry.lockedUntil = 0;
      entries.set(key, entry);
      this.#append(entry);
    }

    if (attempt !== undefined) {
      const print = this.#fingerprint(attempt);
      if (entry.seen.includes(print)) return 0;
      entry.seen.push(print);
    }
    this.#lastCounted = true;
    entry.count++;
    if (entry.count >= maxFailures) {
      entry.count = 0;
      entry.seen.length = 0;
      if (lockMs > 0) {
        entry.lockedUntil = now + lockMs;
        entry.expiresAt = entry.lockedUntil;
        return Math.ceil(lockMs / 1000);
      }
      entry.expiresAt = now;
      return 0;
    }
    entry.expiresAt = entry.windowStart + windowMs;
    return 0;
  }

  /**
   * A lock another instance took (shared state): `key` is locked here too for `lockMs` from now, and
   * its count starts afresh. A longer lock already in place stays.
   */
  lock(key: string, lockMs: number): void {
    if (!(lockMs > 0)) return;
    const now = this.#now();
    let entry = this.#entries.get(key);
    if (entry !== undefined) {
      if (entry !== this.#tail) {
        this.#unlink(entry);
        this.#append(entry);
      }
    } else {
      this.#prune(now);
      entry = this.#claim(key, now);
      entry.lockedUntil = 0;
      this.#entries.set(key, entry);
      this.#append(entry);
    }
    entry.count = 0;
    entry.seen.length = 0;
    entry.windowStart = now;
    entry.lockedUntil = Math.max(entry.lockedUntil, now + lockMs);
    entry.expiresAt = entry.lockedUntil;
  }

  /** 48 bits of a salted hash: the salt keeps a guesser from choosing credentials that collide. */
  #fingerprint(attempt: string | null): number {
    if (attempt === null) return -1;
    return hash('sha256', this.#salt + attempt, 'buffer').readUIntBE(0, 6);
  }

  /**
   * Whether the last recordFailure() counted its failure: false for a credential already counted in
   * the window (or an address locked), which the shared limiter then need not send to Redis again.
   */
  get lastCounted(): boolean {
    return this.#lastCounted;
  }

  /** Number of addresses tracked (including expired ones not yet dropped). */
  get size(): number {
    return this.#entries.size;
  }

  /** Drops up to PRUNE_PER_CALL expired entries from the head. */
  #prune(now: number): void {
    for (let i = 0; i < PRUNE_PER_CALL; i++) {
      const head = this.#head;
      if (head === undefined || head.expiresAt > now) return;
      this.#remove(head);
    }
  }

  /**
   * An Entry for a key not in the map: a fresh one while below capacity,
   * otherwise an evicted one (expired if one is found near the head, else
   * the least recently failing), removed from the map and list and re-keyed.
   */
  #claim(key: string, now: number): Entry {
    if (this.#entries.size < this.#maxEntries) return new Entry(key);
    // size >= maxEntries >= 1, so the list is not empty.
    let victim = this.#head!;
    let candidate: Entry | undefined = victim;
    for (let i = 0; i < EVICTION_SCAN && candidate !== undefined; i++) {
      if (candidate.expiresAt <= now) {
        victim = candidate;
        break;
      }
      candidate = candidate.next;
    }
    this.#remove(victim);
    victim.key = key;
    return victim;
  }

  #remove(entry: Entry): void {
    this.#entries.delete(entry.key);
    this.#unlink(entry);
  }

  #unlink(entry: Entry): void {
    const { prev, next } = entry;
    if (prev === undefined) this.#head = next;
    else prev.next = next;
    if (next === undefined) this.#tail = prev;
    else next.prev = prev;
    entry.prev = undefined;
    entry.next = undefined;
  }

  #append(entry: Entry): void {
    const tail = this.#tail;
    entry.prev = tail;
    entry.next = undefined;
    if (tail === undefined) this.#head = entry;
    else tail.next = entry;
    this.#tail = entry;
  }
}
