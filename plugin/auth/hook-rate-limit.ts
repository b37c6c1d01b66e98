// Rate limits per hook (`rateLimit: { requests, perSeconds, perClient? }` on a mapping, and on wake and
// agent under hooks.endpoints): how many requests a hook admits over a sliding window, counted before
// the token or signature is looked at. A request the limit refuses is not counted; one it admits
// counts whatever its later outcome.
//
// The window is kept as BUCKETS buckets of perSeconds / BUCKETS each, plus the bucket now filling: a
// request counts from its admission until its bucket is more than a whole window old, so no span of
// perSeconds ever holds more than `requests` admissions (a request may be counted up to a tenth of a
// window longer). Every call is O(BUCKETS) with no allocation once a key exists. Memory is bounded:
// at most MAX_KEYS keys (one per hook, or per hook and client address with perClient), each a few
// small typed arrays.
//
// With shared state the counts of the other instances are added in (shared-rate-limit.ts): each
// bucket holds this instance's admissions (`mine`), how many of them Redis has been told (`sent`),
// and what the other instances admitted in it as last heard (`others`).

/** As configured. */
export interface RateLimitConfig {
  requests: number;
  perSeconds: number;
  perClient?: boolean;
}

/** A hook's limit, compiled with the config: the key its counts are kept under and its buckets. */
export interface HookRateLimit {
  /** The hook counted: `wake`, `agent`, or `hook:<match.path>` (the mappings sharing a path count together). */
  readonly hook: string;
  readonly requests: number;
  readonly perSeconds: number;
  readonly perClient: boolean;
  /** Whole milliseconds, the same on every instance (shared buckets line up). */
  readonly bucketMs: number;
}

/** Buckets in a window; one more, the one filling, is counted beside them. */
export const BUCKETS = 10;
const SLOTS = BUCKETS + 1;
/** Keys tracked at most: past this, keys out of their window are dropped, then the oldest tenth. */
const MAX_KEYS = 65536;

export function compileRateLimit(hook: string, config: RateLimitConfig): HookRateLimit {
  return Object.freeze({
    hook,
    requests: config.requests,
    perSeconds: config.perSeconds,
    perClient: config.perClient === true,
    bucketMs: Math.max(1, Math.ceil((config.perSeconds * 1000) / BUCKETS)),
  });
}

/** One hook's (or one hook and client's) buckets, by slot (bucket index modulo SLOTS). */
export class WindowCounts {
  readonly stamps = new Float64Array(SLOTS).fill(-1);
  readonly mine = new Uint32Array(SLOTS);
  readonly sent = new Uint32Array(SLOTS);
  readonly others = new Uint32Array(SLOTS);

  constructor(
    readonly key: string,
    public bucketMs: number,
  ) {}

  /** The slot of bucket `index`, emptied first when it last held an older bucket. */
  slot(index: number): number {
    const slot = index % SLOTS;
    if (this.stamps[slot] !== index) {
      this.stamps[slot] = index;
      this.mine[slot] = 0;
      this.sent[slot] = 0;
      this.others[slot] = 0;
    }
    return slot;
  }

  /** Admissions in the window that ends with bucket `now`, everyone's. */
  total(now: number): number {
    let total = 0;
    for (let s = 0; s < SLOTS; s++) if (this.stamps[s]! > now - SLOTS) total += this.mine[s]! + this.others[s]!;
    return total;
  }

  /** Whether any bucket is still in the window that ends with bucket `now`. */
  live(now: number): boolean {
    for (let s = 0; s < SLOTS; s++) if (this.stamps[s]! > now - SLOTS) return true;
    return false;
  }

  /** Milliseconds from `nowMs` until the window holds fewer than `limit`. */
  waitMs(nowMs: number, limit: number): number {
    const now = Math.floor(nowMs / this.bucketMs);
    let total = this.total(now);
    for (let index = now - SLOTS + 1; index <= now; index++) {
      const s = index % SLOTS;
      if (this.stamps[s] === index) total -= this.mine[s]! + this.others[s]!;
      // Bucket `index` leaves the window when bucket index + SLOTS begins.
      if (total < limit) return (index + SLOTS) * this.bucketMs - nowMs;
    }
    return SLOTS * this.bucketMs;
  }
}

export class HookRateLimiter {
  readonly #counts = new Map<string, WindowCounts>();
  readonly #now: () => number;
  readonly #maxKeys: number;

  constructor(opts?: { now?: () => number; maxKeys?: number }) {
    this.#now = opts?.now ?? Date.now;
    this.#maxKeys = opts?.maxKeys ?? MAX_KEYS;
  }

  /**
   * Counts the request and returns 0 when `limit` admits it; otherwise the seconds (>= 1) until it
   * would, and nothing is counted. `client` is the address key the lockout counts (perClient).
   */
  admit(limit: HookRateLimit, client: string): number {
    const nowMs = this.#now();
    const counts = this.#countsOf(limit.perClient ? `${limit.hook} ${client}` : limit.hook, limit.bucketMs);
    const now = Math.floor(nowMs / limit.bucketMs);
    if (counts.total(now) >= limit.requests) return Math.max(1, Math.ceil(counts.waitMs(nowMs, limit.requests) / 1000));
    counts.mine[counts.slot(now)]!++;
    return 0;
  }

  /** Admissions counted in the window now for `hook` (and `client`, with perClient), everyone's known. */
  counted(limit: HookRateLimit, client = ''): number {
    const counts = this.#counts.get(limit.perClient ? `${limit.hook} ${client}` : limit.hook);
    return counts === undefined ? 0 : counts.total(Math.floor(this.#now() / counts.bucketMs));
  }

  /**
   * The counts of a limit not per client, made when missing: shared state hears of the other
   * instances' admissions to a hook before this instance admits any itself.
   */
  track(limit: HookRateLimit): WindowCounts | undefined {
    return limit.perClient ? undefined : this.#countsOf(limit.hook, limit.bucketMs);
  }

  /** Every key whose window still holds a bucket: what shared-rate-limit.ts exchanges. */
  *live(): Iterable<WindowCounts> {
    const nowMs = this.#now();
    for (const counts of this.#counts.values()) if (counts.live(Math.floor(nowMs / counts.bucketMs))) yield counts;
  }

  get now(): number {
    return this.#now();
  }

  get size(): number {
    return this.#counts.size;
  }

  #countsOf(key: string, bucketMs: number): WindowCounts {
    let counts = this.#counts.get(key);
    if (counts === undefined) {
      if (this.#counts.size >= this.#maxKeys) this.#makeRoom();
      counts = new WindowCounts(key, bucketMs);
      this.#counts.set(key, counts);
    } else if (counts.bucketMs !== bucketMs) {
      // A reload changed the window: the counts start afresh.
      counts.stamps.fill(-1);
      counts.bucketMs = bucketMs;
    }
    return counts;
  }

  /** Drops keys out of their window; when that is not enough, the oldest tenth (insertion order). */
  #makeRoom(): void {
    const nowMs = this.#now();
    for (const [key, counts] of this.#counts) {
      if (!counts.live(Math.floor(nowMs / counts.bucketMs))) this.#counts.delete(key);
    }
    if (this.#counts.size < this.#maxKeys) return;
    let drop = Math.max(1, Math.floor(this.#maxKeys / 10));
    for (const key of this.#counts.keys()) {
      this.#counts.delete(key);
      if (--drop === 0) break;
    }
  }
}
