import { DEFAULTS } from '../settings/defaults.ts';
import { positive } from '../util/text.ts';
import { CredentialPrints, Prints } from './credential-prints.ts';

/**
 * Auth-failure limiter keyed by client address key (see clientAddress()).
 *
 * Every failure counts, whether it repeats one wrong credential or varies it (the spec: repeated
 * failures are rate limited). Token rotation is protected otherwise (rotate()): when a reload changes
 * the credentials, the failures of the current window whose credential the new config accepts are
 * forgiven (and a lock they alone caused is lifted), and for the grace period a credential the old
 * config accepted is refused without being counted. For that each entry keeps, beside its count, salted
 * fingerprints of the credentials it failed with (never the credentials), at most MAX_PRINTS distinct
 * ones, each with how often it failed; failures beyond them, and failures without a credential that a
 * config could accept (no token, a signature), count but are never forgiven.
 *
 * Window semantics: fixed window anchored at the first failure. The first
 * failure of an address opens a window of `windowSeconds`; failures inside it
 * are counted; the first failure after it has elapsed opens a fresh window
 * with a count of 1. When the count reaches `maxFailures` the address is
 * locked for `lockoutSeconds` and its count resets (the failures that caused
 * the lock are kept with the lock, so a rotation can lift it), so the first
 * failure after the lock opens a new window. (A fixed window lets a client
 * spread up to 2 * (maxFailures - 1) failures across a window boundary
 * without being locked; it needs no per-failure timestamps.)
 *
 * Failures reported while an address is locked are not counted and do not
 * extend the lock (callers check lockedFor() before evaluating the token).
 *
 * Memory: at most `maxEntries` entries, each a small fixed-shape object with
 * at most 2 * MAX_PRINTS fingerprints, and at most MAX_RETIRED retired ones (credential-prints.ts).
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
 * capacity allocates no entries. Every request-path operation is O(1); a
 * rotation walks the entries once.
 */

export interface AuthRateLimit {
  maxFailures: number;
  windowSeconds: number;
  lockoutSeconds: number;
  /** After a reload that changed the credentials: how long the retired ones are refused uncounted. */
  rotationGraceSeconds?: number;
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
  /** The forgivable credentials among them (made on the first one). */
  window: Prints | undefined = undefined;
  /** The failures that caused the current lock, and their credentials. */
  lockCount = 0;
  lockPrints: Prints | undefined = undefined;
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

/** The window's and the lock's fingerprint lists change places (no copying). */
function swapPrints(entry: Entry): void {
  const window = entry.window;
  entry.window = entry.lockPrints;
  entry.lockPrints = window;
}

/** What a request needs of a limiter: the local one, or the one shared on Redis. */
export type AuthLimiter = Pick<AuthFailureLimiter, 'lockedFor' | 'recordFailure' | 'rotate'>;

interface Effective {
  maxFailures: number;
  windowMs: number;
  lockMs: number;
}

/** The limits of the last call: a config's limits object is the same for every request. */
let lastLimits: AuthRateLimit | undefined;
let lastEffective: Effective | undefined;

/** The limits with the defaults filled in for missing or nonsensical values. */
function effective(limits: AuthRateLimit): Effective {
  if (limits === lastLimits) return lastEffective!;
  const d = DEFAULTS.authRateLimit;
  lastLimits = limits;
  return (lastEffective = {
    maxFailures: Math.max(1, Math.floor(positive(limits.maxFailures, d.maxFailures))),
    windowMs: positive(limits.windowSeconds, d.windowSeconds) * 1000,
    // A lockout of 0 is allowed and means "never lock".
    lockMs: Number.isFinite(limits.lockoutSeconds) && limits.lockoutSeconds > 0 ? limits.lockoutSeconds * 1000 : 0,
  });
}

export class AuthFailureLimiter {
  readonly #entries = new Map<string, Entry>();
  /** Least recently failing entry. */
  #head: Entry | undefined = undefined;
  /** Most recently failing entry. */
  #tail: Entry | undefined = undefined;
  readonly #maxEntries: number;
  readonly #now: () => number;

  readonly #prints = new CredentialPrints();
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
   * Records one failed authentication for `key`. `credential` is what the request presented when a
   * config could accept it as it is (a hook token, a mapping's bearer or basic secret; see
   * auth/credentials.ts): such a failure can be forgiven by a rotation, and one with a credential a
   * recent reload retired is not counted at all. Returns the lockout in seconds when this failure
   * caused a lock, else 0.
   */
  recordFailure(key: string, limits: AuthRateLimit, credential?: string): number {
    const { maxFailures, windowMs, lockMs } = effective(limits);
    const now = this.#now();
    const entries = this.#entries;
    this.#lastCounted = false;
    const print = credential === undefined ? undefined : this.fingerprint(credential);
    if (print !== undefined && this.#prints.isRetired(print, now)) return 0;

    let entry = entries.get(key);
    if (entry !== undefined) {
      // Move to the tail: this is now the most recently failing address.
      if (entry !== this.#tail) {
        this.#unlink(entry);
        this.#append(entry);
      }
      if (entry.lockedUntil > now) return 0;
      if (entry.count === 0 || now - entry.windowStart >= windowMs) this.#openWindow(entry, now);
    } else {
      this.#prune(now);
      entry = this.#claim(key, now);
      this.#openWindow(entry, now);
      entry.lockedUntil = 0;
      entry.lockCount = 0;
      entry.lockPrints?.clear();
      entries.set(key, entry);
      this.#append(entry);
    }

    this.#lastCounted = true;
    entry.count++;
    if (print !== undefined) (entry.window ??= new Prints()).add(print);
    if (entry.count >= maxFailures) {
      entry.lockCount = entry.count;
      // The window's fingerprints go with the lock; the next window starts empty.
      swapPrints(entry);
      entry.window?.clear();
      entry.count = 0;
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
   * A reload changed the credentials: failures of the current window with a credential in `valid`
   * are taken off the count, a lock that without them would not have been taken is lifted (its other
   * failures count in the window again), and the credentials in `retired` are refused uncounted for
   * the grace period. Returns the addresses whose lock was lifted.
   */
  rotate(valid: Iterable<string>, retired: Iterable<string>, limits: AuthRateLimit): string[] {
    const now = this.#now();
    const { maxFailures, windowMs } = effective(limits);
    const graceMs = Math.max(0, limits.rotationGraceSeconds ?? DEFAULTS.authRateLimit.rotationGraceSeconds) * 1000;
    const validPrints = this.#prints.rotate(valid, retired, graceMs, now);
    const lifted: string[] = [];
    if (validPrints.size === 0) return lifted;
    for (let entry = this.#head; entry !== undefined; entry = entry.next) {
      if (entry.expiresAt <= now) continue;
      if (entry.count > 0) {
        entry.count -= entry.window?.forgive(validPrints) ?? 0;
        if (entry.count === 0) entry.expiresAt = now;
      }
      if (entry.lockedUntil <= now || entry.lockCount === 0) continue;
      const forgiven = entry.lockPrints?.forgive(validPrints) ?? 0;
      entry.lockCount -= forgiven;
      if (forgiven === 0 || entry.lockCount >= maxFailures) continue;
      // Lifted: what is left of the lock's failures is the open window's count.
      entry.lockedUntil = 0;
      entry.count = entry.lockCount;
      swapPrints(entry);
      entry.lockPrints?.clear();
      entry.lockCount = 0;
      entry.windowStart = now;
      entry.expiresAt = entry.count > 0 ? now + windowMs : now;
      lifted.push(entry.key);
    }
    return lifted;
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
      entry.lockCount = 0;
      entry.lockPrints?.clear();
      this.#entries.set(key, entry);
      this.#append(entry);
    }
    this.#openWindow(entry, now);
    entry.lockedUntil = Math.max(entry.lockedUntil, now + lockMs);
    entry.expiresAt = entry.lockedUntil;
  }

  /** A lock lifted where it was decided (shared state: a rotation forgave the failures that caused it). */
  unlock(key: string): void {
    const entry = this.#entries.get(key);
    const now = this.#now();
    if (entry === undefined || entry.lockedUntil <= now) return;
    // Nothing is counted during a lock, so no window is open.
    entry.lockedUntil = 0;
    entry.lockCount = 0;
    entry.lockPrints?.clear();
    entry.expiresAt = now;
  }

  /** A credential's salted fingerprint in this limiter. */
  fingerprint(credential: string): number {
    return this.#prints.fingerprint(credential);
  }

  #openWindow(entry: Entry, now: number): void {
    entry.count = 0;
    entry.window?.clear();
    entry.windowStart = now;
  }

  /**
   * Whether the last recordFailure() counted its failure: false for an address locked or a
   * credential in its grace period, which the shared limiter then does not send to Redis.
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
