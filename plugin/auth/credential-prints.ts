// The limiter's bookkeeping for token rotation: salted fingerprints of the credentials that failed
// (never the credentials), per window and per lock, and the fingerprints a reload retired, refused
// uncounted for the grace period.
import { hash, randomBytes } from 'node:crypto';

/** Distinct credentials an entry keeps the fingerprints of: a rotating sender uses one or two. */
export const MAX_PRINTS = 4;
/** Retired credentials remembered at once (hook tokens and mapping secrets of recent reloads). */
const MAX_RETIRED = 1024;

/** Failures by credential fingerprint: parallel arrays, at most MAX_PRINTS long. */
export class Prints {
  readonly prints: number[] = [];
  readonly times: number[] = [];

  add(print: number): void {
    const i = this.prints.indexOf(print);
    if (i >= 0) this.times[i]!++;
    else if (this.prints.length < MAX_PRINTS) {
      this.prints.push(print);
      this.times.push(1);
    }
  }

  /** Drops the fingerprints in `valid`; returns how many failures they were. */
  forgive(valid: ReadonlySet<number>): number {
    let removed = 0;
    for (let i = this.prints.length - 1; i >= 0; i--) {
      if (!valid.has(this.prints[i]!)) continue;
      removed += this.times[i]!;
      this.prints.splice(i, 1);
      this.times.splice(i, 1);
    }
    return removed;
  }

  clear(): void {
    this.prints.length = 0;
    this.times.length = 0;
  }
}

/** One limiter's fingerprints (its own salt) and the credentials its reloads retired. */
export class CredentialPrints {
  readonly #salt = randomBytes(16).toString('hex');
  /** Fingerprints of credentials a reload retired -> ms until which they are refused uncounted. */
  readonly #retired = new Map<number, number>();

  /**
   * 48 bits of a salted hash: the salt keeps a guesser from choosing credentials that collide. Read
   * from the hex digest: a Buffer digest per failure costs its backing store and the collector's
   * work on it, on the path every wrong credential takes.
   */
  fingerprint(credential: string): number {
    return Number.parseInt(hash('sha256', this.#salt + credential, 'hex').slice(0, 12), 16);
  }

  /**
   * A reload: the fingerprints of `valid` (returned) are no longer retired, and `retired` are, until
   * `graceMs` from now; expired ones are dropped.
   */
  rotate(valid: Iterable<string>, retired: Iterable<string>, graceMs: number, now: number): Set<number> {
    const validPrints = new Set<number>();
    for (const c of valid) validPrints.add(this.fingerprint(c));
    for (const [print, until] of this.#retired) {
      if (until <= now || validPrints.has(print)) this.#retired.delete(print);
    }
    if (graceMs > 0) {
      for (const c of retired) {
        const print = this.fingerprint(c);
        if (validPrints.has(print)) continue;
        // Oldest first out: a Map iterates in insertion order.
        if (this.#retired.size >= MAX_RETIRED) this.#retired.delete(this.#retired.keys().next().value!);
        this.#retired.set(print, now + graceMs);
      }
    }
    return validPrints;
  }

  isRetired(print: number, now: number): boolean {
    const until = this.#retired.get(print);
    if (until === undefined) return false;
    if (until > now) return true;
    this.#retired.delete(print);
    return false;
  }
}
