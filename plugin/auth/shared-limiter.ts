// Auth failures counted across instances on Redis (hooks.sharedState). The lock check stays local and
// synchronous: every instance keeps its own AuthFailureLimiter, counts there as before (so it still
// protects itself while Redis is down), and also counts in Redis; a lock Redis decides is published
// and every instance installs it locally, and on (re)connection the locks in force are loaded.
// Redis holds, per address, a set of salted fingerprints of the distinct wrong credentials of the
// window (never the credentials), so a sender repeating one credential is not locked out there either.
import { hash, randomBytes } from 'node:crypto';
import type { Logger } from '../host.ts';
import { DEFAULTS } from '../config/defaults.ts';
import { script } from '../shared/redis-script.ts';
import type { SharedRedis } from '../shared/shared-redis.ts';
import type { AuthFailureLimiter, AuthLimiter, AuthRateLimit } from './limiter.ts';

/**
 * KEYS: failures set, lock. ARGV: fingerprint, maxFailures, windowMs, lockMs, channel, address.
 * The window opens with the set's first member and closes with its expiry, as in the local limiter.
 */
const RECORD_FAILURE = script(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
local count = redis.call('SCARD', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
if count < tonumber(ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1])
local lockMs = tonumber(ARGV[4])
if lockMs <= 0 then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', lockMs)
redis.call('PUBLISH', ARGV[5], lockMs .. ' ' .. ARGV[6])
return lockMs
`);

/** Longest lock a message may install: the schema's lockoutSeconds maximum. */
const MAX_LOCK_MS = 86_400_000;
/** "<lockMs> <address key>"; a key may be the text of a hop that is no address (spaces and all). */
const LOCK_MESSAGE = /^([1-9][0-9]{0,8}) (.{1,300})$/s;

/** Glob characters of a SCAN pattern, escaped so a prefix matches itself only. */
const globEscape = (s: string): string => s.replace(/[*?[\]\\]/g, '\\$&');

export class SharedAuthLimiter implements AuthLimiter {
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

  recordFailure(key: string, limits: AuthRateLimit, attempt?: string | null): number {
    const locked = this.local.recordFailure(key, limits, attempt);
    // What this instance already counted in its window, Redis has been told: a flood repeating one
    // wrong credential costs Redis nothing.
    if (this.local.lastCounted && this.redis.up && this.#salt !== undefined) {
      void this.#recordShared(key, limits, attempt, locked > 0);
    }
    return locked;
  }

  async #recordShared(key: string, limits: AuthRateLimit, attempt: string | null | undefined, lockedHere: boolean) {
    const maxFailures = Math.max(1, Math.floor(limits.maxFailures || DEFAULTS.authRateLimit.maxFailures));
    const windowMs = Math.round((limits.windowSeconds || DEFAULTS.authRateLimit.windowSeconds) * 1000);
    const lockMs = limits.lockoutSeconds > 0 ? Math.round(limits.lockoutSeconds * 1000) : 0;
    let lockedMs: unknown;
    try {
      lockedMs = await this.redis.script(
        RECORD_FAILURE,
        [this.redis.key(`auth:failures:${key}`), this.redis.key(`auth:lock:${key}`)],
        [this.#fingerprint(attempt), maxFailures, windowMs, lockMs, this.#channel, key],
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

  /** The credential as the set keeps it; without one (undefined) every failure counts. */
  #fingerprint(attempt: string | null | undefined): string {
    if (attempt === undefined) return randomBytes(8).toString('hex');
    if (attempt === null) return '-';
    return hash('sha256', this.#salt + attempt, 'hex').slice(0, 32);
  }

  #lockFromMessage(message: string): void {
    const m = LOCK_MESSAGE.exec(message);
    if (m) this.local.lock(m[2]!, Math.min(Number(m[1]), MAX_LOCK_MS));
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
