// Rate limits per hook counted across instances (hooks.sharedState). A request never waits on Redis
// for its limit: each instance counts locally (hook-rate-limit.ts) and, every EXCHANGE_MS, tells Redis
// what it admitted since the last exchange and hears what every instance admitted, bucket by bucket.
// So the shared limit may be passed by at most what the instances admit between two exchanges. The
// hooks counted as a whole are exchanged whether or not this instance admitted any; a client (with
// perClient) once this instance has seen it.
// Redis keeps, per hook (or hook and client), a hash from bucket index to admissions; a bucket out of
// the window is dropped, and the hash expires with its last bucket. While Redis is down the counts
// stay local, and what was not told is told when it is back.
import type { SharedRedis } from '../redis/shared-redis.ts';
import { script } from '../redis/redis-script.ts';
import { PeriodicExchange } from '../redis/periodic-exchange.ts';
import { BUCKETS, type HookRateLimit, type HookRateLimiter, type WindowCounts } from './hook-rate-limit.ts';

/** Keys per script call: a flood of clients with perClient is told in several calls. */
const KEYS_PER_CALL = 500;

/**
 * KEYS: one hash per counted key. ARGV, per key: oldest bucket kept, ttl ms, number of pairs, then
 * (bucket, admissions to add) pairs. Returns per key the kept (bucket, total) pairs.
 */
const EXCHANGE = script(`
local out = {}
local a = 1
for k = 1, #KEYS do
  local oldest = tonumber(ARGV[a])
  local ttl = ARGV[a + 1]
  local pairs = tonumber(ARGV[a + 2])
  a = a + 3
  for i = 1, pairs do
    redis.call('HINCRBY', KEYS[k], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  local all = redis.call('HGETALL', KEYS[k])
  local row = {}
  for i = 1, #all, 2 do
    if tonumber(all[i]) < oldest then
      redis.call('HDEL', KEYS[k], all[i])
    else
      row[#row + 1] = all[i]
      row[#row + 1] = all[i + 1]
    end
  end
  if #row > 0 then redis.call('PEXPIRE', KEYS[k], ttl) end
  out[k] = row
end
return out
`);

/** What one exchange told Redis of a key: the buckets and how many of `mine` each had sent. */
interface Told {
  counts: WindowCounts;
  buckets: number[];
  deltas: number[];
}

export class SharedRateLimits {
  readonly #exchange: PeriodicExchange;

  constructor(
    private readonly local: HookRateLimiter,
    private readonly redis: SharedRedis,
    /** The limits of the config in force. */
    private readonly limits: () => Iterable<HookRateLimit>,
  ) {
    this.#exchange = new PeriodicExchange(redis, () => this.#exchangeAll());
  }

  /** One exchange of every key still in its window; skipped while Redis is down or one is under way. */
  exchange(): Promise<void> {
    return this.#exchange.run();
  }

  close(): void {
    this.#exchange.close();
  }

  async #exchangeAll(): Promise<void> {
    let batch: Told[] = [];
    const exchanged = new Set<WindowCounts>(this.local.live());
    for (const limit of this.limits()) {
      const counts = this.local.track(limit);
      if (counts) exchanged.add(counts);
    }
    for (const counts of exchanged) {
      batch.push(this.#tell(counts));
      if (batch.length === KEYS_PER_CALL) {
        await this.#send(batch);
        batch = [];
      }
    }
    if (batch.length) await this.#send(batch);
  }

  /** The buckets of `counts` in its window, and what of them Redis has not heard yet (marked as sent). */
  #tell(counts: WindowCounts): Told {
    const now = Math.floor(this.local.now / counts.bucketMs);
    const buckets: number[] = [];
    const deltas: number[] = [];
    for (let s = 0; s < counts.stamps.length; s++) {
      const index = counts.stamps[s]!;
      if (index <= now - BUCKETS - 1) continue;
      const delta = counts.mine[s]! - counts.sent[s]!;
      if (delta === 0) continue;
      buckets.push(index);
      deltas.push(delta);
      counts.sent[s] = counts.mine[s]!;
    }
    return { counts, buckets, deltas };
  }

  async #send(batch: Told[]): Promise<void> {
    const keys: string[] = [];
    const args: (string | number)[] = [];
    for (const { counts, buckets, deltas } of batch) {
      const now = Math.floor(this.local.now / counts.bucketMs);
      keys.push(this.redis.key(`rate:${counts.key}`));
      args.push(now - BUCKETS, (BUCKETS + 2) * counts.bucketMs, buckets.length);
      for (let i = 0; i < buckets.length; i++) args.push(buckets[i]!, deltas[i]!);
    }
    let rows: unknown;
    try {
      rows = await this.redis.script(EXCHANGE, keys, args);
    } catch {
      // Not told after all: told at the next exchange (the connection reports the outage once).
      for (const told of batch) untell(told);
      return;
    }
    if (!Array.isArray(rows)) return;
    batch.forEach(({ counts }, k) => {
      const row: unknown = rows[k];
      if (Array.isArray(row)) hear(counts, row as string[]);
    });
  }
}

function untell({ counts, buckets, deltas }: Told): void {
  buckets.forEach((index, i) => {
    const s = index % counts.stamps.length;
    if (counts.stamps[s] === index) counts.sent[s] = Math.max(0, counts.sent[s]! - deltas[i]!);
  });
}

/** Redis's totals per bucket: what the others admitted is the total less what this instance told. */
function hear(counts: WindowCounts, row: readonly string[]): void {
  for (let i = 0; i + 1 < row.length; i += 2) {
    const index = Number(row[i]);
    const total = Number(row[i + 1]);
    if (!Number.isSafeInteger(index) || !Number.isFinite(total)) continue;
    const s = index % counts.stamps.length;
    // A slot already holding a newer bucket: this one is out of the window here.
    if (counts.stamps[s]! > index) continue;
    const slot = counts.slot(index);
    counts.others[slot] = Math.max(0, total - counts.sent[slot]!);
  }
}
