// Dedupe keys claimed across instances on Redis (hooks.sharedState). A new key is claimed with a
// short lease: a "pending" value naming the claim and the body's hash, which its instance renews
// while the request is in flight. The first answer then replaces it for the dedupe window, or a
// failure deletes it so a retry is processed. So a claim outlives the request (or the instance) that
// took it by one lease at most, and a pending value without an expiry, or a longer one (planted, or
// left by an older version), is taken over at once. An instance that finds the key pending polls
// until it holds an answer or can be claimed: the same delivery arriving at two instances at once is
// rare, so its wait is polled rather than every instance being told of every answer.
// A claim whose command failed or timed out is finished all the same: Redis may still carry the
// claim out when it wakes, and the answer that follows it makes a retry at another instance a
// duplicate. Whenever Redis cannot say, the caller goes on with its local keys.
import { randomBytes } from 'node:crypto';
import type { Logger } from '../host.ts';
import { script } from '../redis/redis-script.ts';
import type { SharedRedis } from '../redis/shared-redis.ts';
import { otherBody, parseBodyHash, type BodyHash } from './body-hash.ts';
import type { DedupeLimits, FirstAnswer } from './dedupe-keys.ts';
import { LimitedWarning } from './limited-warning.ts';

/** How long a claim holds unless renewed: an instance that dies mid-request frees its keys this soon. */
const LEASE_MS = 3000;
/** A claim in flight is renewed this often, well within its lease. */
const RENEW_MS = 1000;
/** A waiting instance looks again this often... */
const POLL_MS = 25;
/** ...for at most this long, after which the request is refused (409, to be retried). */
const WAIT_MS = 10_000;

/**
 * KEYS: the key. ARGV: the pending value, the lease. Claims the key unless it holds an answer or a
 * live claim (a pending value whose expiry is within a lease), and returns what it holds then.
 */
const CLAIM = script(`
local v = redis.call('GET', KEYS[1])
if v then
  if string.sub(v, 1, 1) ~= 'P' then return v end
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 and ttl <= tonumber(ARGV[2]) then return v end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`);

/** KEYS: the key. ARGV: the pending value, the lease. Only the claim's owner. */
const RENEW = script(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
`);

/**
 * KEYS: the key, the scope's index. ARGV: the pending value, the answer (empty: release), windowMs,
 * the answer's time, maxKeys. Only over the owner's claim, or no value at all (a claim that timed
 * out, or lapsed, before Redis carried it out). The index (a sorted set by time) bounds each scope to
 * maxKeys answers: past it the scope's own oldest go.
 */
const FINISH = script(`
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  if v then redis.call('DEL', KEYS[1]) end
  return 1
end
local windowMs = tonumber(ARGV[3])
local at = tonumber(ARGV[4])
redis.call('SET', KEYS[1], ARGV[2], 'PX', windowMs)
redis.call('ZADD', KEYS[2], at, KEYS[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', at - windowMs)
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  local oldest = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #oldest, 2 do
    local old = redis.call('GET', oldest[i])
    if old and string.sub(old, 1, 1) ~= 'P' then redis.call('DEL', oldest[i]) end
  end
end
redis.call('PEXPIRE', KEYS[2], windowMs)
return 1
`);

/**
 * KEYS: the key. ARGV: the amended answer, the stored answer's opening (its time). Replaces the
 * answer of the same first request, keeping its expiry; a claim or another answer stays.
 */
const AMEND = script(`
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #ARGV[2]) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return 1
`);

/** This instance holds the key across instances (or may: see the file's comment). */
export interface SharedClaim {
  settle(answer: FirstAnswer): void;
  release(): void;
  /** After settle: the answer became final (a waited run ended). */
  amend(answer: FirstAnswer): void;
}

export type SharedClaimResult =
  | { claim: SharedClaim }
  | { answer: FirstAnswer }
  /** The key's first request had another body. */
  | { reused: true }
  /** Another instance still holds the key after the longest wait, or Redis went away meanwhile. */
  | { busy: true }
  /** The key holds something that is neither a claim nor an answer. */
  | { unreadable: true };

/** An answer as stored: a success status, a time, an object body if any, the body's hash if any. */
function parseAnswer(value: string): { answer: FirstAnswer; hash: BodyHash | undefined } | undefined {
  let a: Record<string, unknown>;
  try {
    a = JSON.parse(value) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (a === null || typeof a !== 'object') return undefined;
  const { at, status, body, bodyHash } = a;
  if (typeof at !== 'number' || !Number.isFinite(at)) return undefined;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 299) return undefined;
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) return undefined;
  const hash = parseBodyHash(bodyHash);
  if (bodyHash !== undefined && !hash) return undefined;
  const answer = body === undefined ? { at, status } : { at, status, body: body as Record<string, unknown> };
  return { answer, hash };
}

export class SharedDedupe {
  readonly #unreadable: LimitedWarning;

  constructor(
    private readonly redis: SharedRedis,
    logger: Logger,
  ) {
    // Loaded whenever the connection is (re)made: a claim or answer sent while Redis hangs must not
    // meet NOSCRIPT when Redis wakes, as its sender no longer waits to send the script's source.
    redis.onReady(async () => {
      for (const lua of [CLAIM, RENEW, FINISH, AMEND]) await redis.commands.script('LOAD', lua.source);
    });
    this.#unreadable = new LimitedWarning(
      logger,
      'a dedupe record on Redis is unreadable; requests with its key are refused until it expires or is deleted',
    );
  }

  /**
   * The key claimed here, or what its first request on any instance says of this one; undefined when
   * Redis is down: the caller goes on with its local keys.
   */
  async claim(
    scope: string,
    key: string,
    hash: BodyHash | undefined,
    limits: DedupeLimits,
  ): Promise<SharedClaimResult | undefined> {
    if (!this.redis.up) return undefined;
    // The scope's length keeps "a:b" + "c" apart from "a" + "b:c".
    const id = this.redis.key(`dedupe:${scope.length}:${scope}:${key}`);
    const pending = `P${randomBytes(12).toString('hex')}:${hash?.hex ?? ''}`;
    const held = (): { claim: SharedClaim } => ({ claim: this.#held(scope, id, pending, limits) });
    const deadline = Date.now() + WAIT_MS;
    let waited = false;
    for (;;) {
      let found: unknown;
      try {
        found = await this.redis.script(CLAIM, [id], [pending, LEASE_MS]);
      } catch {
        // Once another instance is known to hold the key, running here could run it twice.
        return waited ? { busy: true } : held();
      }
      if (found === null) return held();
      if (typeof found !== 'string') return this.#unreadableIn(scope);
      if (found.startsWith('P')) {
        if (otherBody(parseBodyHash(found.slice(found.indexOf(':') + 1)), hash)) return { reused: true };
        if (Date.now() >= deadline || !this.redis.up) return { busy: true };
        waited = true;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        continue;
      }
      const stored = parseAnswer(found);
      if (!stored) return this.#unreadableIn(scope);
      return otherBody(stored.hash, hash) ? { reused: true } : { answer: stored.answer };
    }
  }

  #unreadableIn(scope: string): { unreadable: true } {
    // The scope only: the key and the value are the sender's (or whoever wrote to Redis).
    this.#unreadable.note(scope, { scope });
    return { unreadable: true };
  }

  #held(scope: string, id: string, pending: string, limits: DedupeLimits): SharedClaim {
    const index = this.redis.key(`dedupe-index:${scope.length}:${scope}`);
    const renewal = setInterval(() => {
      this.redis.script(RENEW, [id], [pending, LEASE_MS]).catch(() => {});
    }, RENEW_MS);
    renewal.unref();
    // Not awaited: the answer goes out meanwhile; a waiting instance sees it once it is stored.
    const finish = (answer: string, at: number): void => {
      clearInterval(renewal);
      this.redis.script(FINISH, [id, index], [pending, answer, limits.windowMs, at, limits.maxKeys]).catch(() => {});
    };
    const bodyHash = pending.slice(pending.indexOf(':') + 1);
    // `at` first: AMEND knows the first request's answer by its opening.
    const stored = ({ at, status, body }: FirstAnswer): string =>
      JSON.stringify({ at, status, ...(body === undefined ? {} : { body }), ...(bodyHash ? { bodyHash } : {}) });
    return {
      settle: (answer) => finish(stored(answer), answer.at),
      release: () => finish('', 0),
      // Sent after the settle's FINISH on the same connection, so Redis carries them out in that order.
      amend: (answer) => {
        this.redis.script(AMEND, [id], [stored(answer), `{"at":${answer.at},`]).catch(() => {});
      },
    };
  }
}
