// Auth failures counted across instances on Redis (hooks.sharedState). The lock check stays local and
// synchronous: every instance keeps its own AuthFailureLimiter, counts there as before (so it still
// protects itself while Redis is down), and also counts in Redis; a lock Redis decides is published
// and every instance installs it locally, and on (re)connection the locks in force are loaded.
// Redis holds, per address, a hash: the window's count ('#') and, for up to MAX_PRINTS credentials a
// rotation could make valid, how often each failed under its salted fingerprint (never the
// credential). A lock takes the hash over, so a rotation can still forgive the failures behind it;
// lifting a lock is published like taking one ("0 <address>"). The failures of one turn of the event
// loop go to Redis together, one script per address, so a flood costs Redis little.
import { hash, randomBytes } from 'node:crypto';
import type { Logger } from '../host.ts';
import { script } from '../redis/redis-script.ts';
import type { SharedRedis } from '../redis/shared-redis.ts';
import type { AuthFailureLimiter, AuthLimiter, AuthRateLimit } from './limiter.ts';
import { MAX_PRINTS } from './credential-prints.ts';
import { DEFAULTS } from '../settings/defaults.ts';

/**
 * KEYS: failures hash, lock. ARGV: maxFailures, windowMs, lockMs, channel, address, maxPrints, then
 * (fingerprint, failures) pairs; an empty fingerprint counts without a credential. The window opens
 * with the hash and closes with its expiry, as in the local limiter.
 */
const RECORD_FAILURES = script(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local added = 0
for i = 7, #ARGV, 2 do
  local n = tonumber(ARGV[i + 1])
  added = added + n
  local print = ARGV[i]
  if print ~= '' and (redis.call('HEXISTS', KEYS[1], print) == 1 or redis.call('HLEN', KEYS[1]) <= tonumber(ARGV[6])) then
    redis.call('HINCRBY', KEYS[1], print, n)
  end
end
local count = redis.call('HINCRBY', KEYS[1], '#', added)
if count == added then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if count < tonumber(ARGV[1]) then return 0 end
local lockMs = tonumber(ARGV[3])
if lockMs <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('PEXPIRE', KEYS[2], lockMs)
redis.call('PUBLISH', ARGV[4], lockMs .. ' ' .. ARGV[5])
return lockMs
`);

/**
 * KEYS: failures hash, lock. ARGV: maxFailures, windowMs, channel, address, then the fingerprints of
 * the credentials now valid. Their failures are taken off the window and off the lock; a lock left
 * under maxFailures is lifted and what remains of it counts in the window again. Returns 1 when lifted.
 */
const FORGIVE = script(`
local function forgive(key)
  local removed = 0
  for i = 5, #ARGV do
    local n = redis.call('HGET', key, ARGV[i])
    if n then
      removed = removed + tonumber(n)
      redis.call('HDEL', key, ARGV[i])
    end
  end
  return removed
end
local removed = forgive(KEYS[1])
if removed > 0 and redis.call('HINCRBY', KEYS[1], '#', -removed) <= 0 then redis.call('DEL', KEYS[1]) end
local fromLock = forgive(KEYS[2])
if fromLock == 0 then return 0 end
local left = redis.call('HINCRBY', KEYS[2], '#', -fromLock)
if left >= tonumber(ARGV[1]) then return 0 end
if left > 0 then
  local rest = redis.call('HGETALL', KEYS[2])
  for i = 1, #rest, 2 do redis.call('HINCRBY', KEYS[1], rest[i], rest[i + 1]) end
  if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
end
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[3], '0 ' .. ARGV[4])
return 1
`);

/** Longest lock a message may install: the schema's lockoutSeconds maximum. */
const MAX_LOCK_MS = 86_400_000;
/** "<lockMs> <address key>"; a key may be the text of a hop that is no address (spaces and all). */
const LOCK_MESSAGE = /^(0|[1-9][0-9]{0,8}) (.{1,300})$/s;

/** Glob characters of a SCAN pattern, escaped so a prefix matches itself only. */
const globEscape = (s: string): string => s.replace(/[*?[\]\\]/g, '\\$&');

/** An address's failures of this turn: how often each fingerprint ('' for none) failed. */
interface PendingFailures {
  limits: AuthRateLimit;
  prints: Map<string, number>;
  lockedHere: boolean;
}

export class SharedAuthLimiter implements AuthLimiter {
  #pending = new Map<string, PendingFailures>();
  #flushScheduled = false;
  /** Shared by all instances (kept in Redis), so the same credential has the same fingerprint on each. */
  #salt: string | undefined;
  readonly #channel: string;

  constructor(
    private readonly local: AuthFailureLimiter,
    private readonly redis: SharedRedis,
    private readonly logger: Logger,
  ) {
    this.#channel = redis.key('auth:locks');
    redis.subscribe(this.#channel, (message) => this.#lockFromMessage(message));
    redis.onReady(() => this.#loadOnConnect());
  }

  lockedFor(key: string): number {
    return this.local.lockedFor(key);
  }

  recordFailure(key: string, limits: AuthRateLimit, credential?: string): number {
    const locked = this.local.recordFailure(key, limits, credential);
    // A failure the local limiter did not count (a locked address, a credential in its grace period)
    // is not sent either.
    if (this.local.lastCounted && this.redis.up && this.#salt !== undefined) {
      this.#queue(key, limits, credential === undefined ? '' : this.#fingerprint(credential), locked > 0);
    }
    return locked;
  }

  /** A failure for Redis: those of one turn of the event loop go together, one script per address. */
  #queue(key: string, limits: AuthRateLimit, print: string, lockedHere: boolean): void {
    let pending = this.#pending.get(key);
    if (pending === undefined) {
      pending = { limits, prints: new Map(), lockedHere };
      this.#pending.set(key, pending);
    }
    pending.limits = limits;
    pending.lockedHere ||= lockedHere;
    pending.prints.set(print, (pending.prints.get(print) ?? 0) + 1);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(this.#flush);
    }
  }

  readonly #flush = (): void => {
    const batch = this.#pending;
    this.#pending = new Map();
    this.#flushScheduled = false;
    for (const [key, pending] of batch) void this.#recordShared(key, pending);
  };

  /** The local rotation at once; Redis forgives the same failures of every instance's addresses. */
  rotate(valid: Iterable<string>, retired: Iterable<string>, limits: AuthRateLimit): string[] {
    const validList = [...valid];
    const lifted = this.local.rotate(validList, retired, limits);
    if (this.redis.up && this.#salt !== undefined && validList.length > 0) {
      this.#forgiveShared(
        validList.map((c) => this.#fingerprint(c)),
        limits,
      ).catch(() => {
        // Redis went away: the locks there expire on their own; the connection reports the outage once.
      });
    }
    return lifted;
  }

  async #recordShared(key: string, { limits, prints, lockedHere }: PendingFailures) {
    const { maxFailures, windowMs, lockMs } = sharedLimits(limits);
    let lockedMs: unknown;
    try {
      lockedMs = await this.redis.script(
        RECORD_FAILURES,
        [this.redis.key(`auth:failures:${key}`), this.redis.key(`auth:lock:${key}`)],
        [maxFailures, windowMs, lockMs, this.#channel, key, MAX_PRINTS, ...[...prints].flat()],
      );
    } catch {
      // Redis went away: the local count stands; the connection reports the outage once.
      return;
    }
    if (typeof lockedMs === 'number' && lockedMs > 0 && !lockedHere) {
      this.logger.warn('client address locked after repeated authentication failures', {
        client: key,
        seconds: Math.ceil(lockedMs / 1000),
        shared: true,
      });
    }
  }

  /** Every address with failures or a lock in Redis, forgiven by the scripts (a reload is rare). */
  async #forgiveShared(prints: string[], limits: AuthRateLimit): Promise<void> {
    const { maxFailures, windowMs } = sharedLimits(limits);
    const addresses = new Set<string>();
    for (const kind of ['failures', 'lock']) {
      const prefix = this.redis.key(`auth:${kind}:`);
      let cursor = '0';
      do {
        const [next, keys] = await this.redis.commands.scan(cursor, 'MATCH', `${globEscape(prefix)}*`, 'COUNT', 1000);
        cursor = next;
        for (const k of keys) addresses.add(k.slice(prefix.length));
      } while (cursor !== '0');
    }
    for (const address of addresses) {
      await this.redis.script(
        FORGIVE,
        [this.redis.key(`auth:failures:${address}`), this.redis.key(`auth:lock:${address}`)],
        [maxFailures, windowMs, this.#channel, address, ...prints],
      );
    }
  }

  /** The credential as Redis keeps it: the same on every instance (the salt is shared), never the credential. */
  #fingerprint(credential: string): string {
    return hash('sha256', this.#salt + credential, 'hex').slice(0, 32);
  }

  #lockFromMessage(message: string): void {
    const m = LOCK_MESSAGE.exec(message);
    if (!m) return;
    if (m[1] === '0') this.local.unlock(m[2]!);
    else this.local.lock(m[2]!, Math.min(Number(m[1]), MAX_LOCK_MS));
  }

  /** The shared salt (the first instance sets it), then every lock in force. */
  async #loadOnConnect(): Promise<void> {
    const mine = randomBytes(16).toString('hex');
    const saltKey = this.redis.key('auth:salt');
    const existing = await this.redis.commands.set(saltKey, mine, 'NX', 'GET');
    this.#salt = existing ?? mine;

    const lockPrefix = this.redis.key('auth:lock:');
    const match = `${globEscape(lockPrefix)}*`;
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.commands.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      if (keys.length === 0) continue;
      const pipeline = this.redis.commands.pipeline();
      for (const k of keys) pipeline.pttl(k);
      const ttls = (await pipeline.exec()) ?? [];
      keys.forEach((k, i) => {
        const ttl = ttls[i]?.[1];
        if (typeof ttl === 'number' && ttl > 0) this.local.lock(k.slice(lockPrefix.length), Math.min(ttl, MAX_LOCK_MS));
      });
    } while (cursor !== '0');
  }
}

/** The limits as the scripts take them, whole milliseconds. */
function sharedLimits(limits: AuthRateLimit): { maxFailures: number; windowMs: number; lockMs: number } {
  return {
    maxFailures: Math.max(1, Math.floor(limits.maxFailures || DEFAULTS.authRateLimit.maxFailures)),
    windowMs: Math.round((limits.windowSeconds || DEFAULTS.authRateLimit.windowSeconds) * 1000),
    lockMs: limits.lockoutSeconds > 0 ? Math.round(limits.lockoutSeconds * 1000) : 0,
  };
}
