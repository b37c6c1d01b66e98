// Dedupe keys claimed across instances on Redis (hooks.sharedState). A new key is claimed with one
// SET NX (a short-lived "pending" value carrying this claim's token); the first answer then replaces
// it for the dedupe window, or a failure deletes it so a retry is processed. An instance that finds
// the key pending polls until it holds an answer, or is gone and can be claimed: the same delivery
// arriving at two instances at once is rare, so its wait is polled rather than every instance being
// told of every answer (pub/sub would cost each instance a message per keyed request anywhere).
// Whenever Redis fails, the caller goes on with its local keys: a request never fails because
// Redis is down.
import { randomBytes } from 'node:crypto';
import { script } from '../shared/redis-script.ts';
import type { SharedRedis } from '../shared/shared-redis.ts';
import type { FirstAnswer } from './dedupe-keys.ts';

/**
 * How long a claim holds while its request runs: longer than building and accepting any action
 * takes. An instance that dies meanwhile leaves the key to be claimed again after this.
 */
const CLAIM_TTL_MS = 60_000;
/** A waiting instance looks again this often. */
const POLL_MS = 25;

/** KEYS: the key. ARGV: pending value, answer (empty: release), windowMs. Only the claim's owner. */
const FINISH = script(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1])
else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1
`);

/** This instance holds the key across instances. */
export interface SharedClaim {
  settle(answer: FirstAnswer): void;
  release(): void;
}

export type SharedClaimResult = { claim: SharedClaim } | { answer: FirstAnswer };

function parseAnswer(value: string): FirstAnswer | undefined {
  try {
    const a = JSON.parse(value) as FirstAnswer;
    if (typeof a?.status !== 'number' || typeof a.at !== 'number') return undefined;
    if (a.body !== undefined && (a.body === null || typeof a.body !== 'object' || Array.isArray(a.body)))
      return undefined;
    return a.body === undefined ? { at: a.at, status: a.status } : { at: a.at, status: a.status, body: a.body };
  } catch {
    return undefined;
  }
}

export class SharedDedupe {
  constructor(private readonly redis: SharedRedis) {}

  /**
   * The key claimed here, or the answer its first request got on any instance; undefined when Redis
   * cannot say (down, too slow, an unreadable value): the caller goes on with its local keys.
   */
  async claim(scope: string, key: string, windowMs: number): Promise<SharedClaimResult | undefined> {
    if (!this.redis.up) return undefined;
    // The scope's length keeps "a:b" + "c" apart from "a" + "b:c".
    const id = this.redis.key(`dedupe:${scope.length}:${scope}:${key}`);
    const pending = `P${randomBytes(12).toString('hex')}`;
    const deadline = Date.now() + CLAIM_TTL_MS + POLL_MS;
    try {
      for (;;) {
        const found = await this.redis.commands.set(id, pending, 'PX', CLAIM_TTL_MS, 'NX', 'GET');
        if (found === null) return { claim: this.#held(id, pending, windowMs) };
        if (!found.startsWith('P')) {
          const answer = parseAnswer(found);
          return answer && { answer };
        }
        if (Date.now() > deadline || !this.redis.up) return undefined;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    } catch {
      return undefined;
    }
  }

  #held(id: string, pending: string, windowMs: number): SharedClaim {
    // Not awaited: the answer goes out meanwhile; a waiting instance sees it once it is stored.
    const finish = (answer: string): void => {
      this.redis.script(FINISH, [id], [pending, answer, windowMs]).catch(() => {});
    };
    return {
      settle: ({ at, status, body }) =>
        finish(JSON.stringify(body === undefined ? { at, status } : { at, status, body })),
      release: () => finish(''),
    };
  }
}
