// Held actions on the queue's Redis (hooks.queue): what a paused hook (or a budget that holds) keeps
// until it may go on, shared by every door and taker. Each hook's held entries are a sorted set
// scored by the arrival number every entry gets when a door adds it (one counter for the queue), not
// a list: an entry a taker hands back (its hook was paused again before it was carried out) returns
// to its own place, ahead of what arrived after it, and the same entry held twice is one member.
// A hash keeps the counts and bytes held, per hook and in all, so hooks.maxHeld and
// hooks.maxHeldBytes bound every instance together. Every move is one script: held → stream
// (release), stream → held (a taker's hold, confirming the entry in the same step).
import { refuse } from '../errors.ts';
import { script } from '../redis/redis-script.ts';

/** What a client refused for a full hold is told to wait, in seconds (as without the queue). */
export const HELD_FULL_RETRY_SECONDS = 30;

/** The Redis keys of the held entries beside a queue's stream. */
export interface HeldKeys {
  /** The hook's held entries (a sorted set scored by arrival number). */
  of(hook: string): string;
  /** Counts and bytes held: fields n and b in all, n:<hook> and b:<hook> per hook. */
  readonly sizes: string;
  /** The arrival counter every added entry draws from. */
  readonly arrivals: string;
}

export function heldKeys(stream: string): HeldKeys {
  return { of: (hook) => `${stream}:held:${hook}`, sizes: `${stream}:held`, arrivals: `${stream}:arrivals` };
}

/**
 * Lua shared by the scripts: hold(zset, sizes, hook, seq, payload) adds the member and counts it
 * (returns 1), or does nothing when it is held already (0).
 */
export const HOLD_FUNCTION = `
local function hold(zset, sizes, hook, seq, payload)
  if redis.call('ZADD', zset, 'NX', seq, payload) == 0 then return 0 end
  local bytes = string.len(payload)
  redis.call('HINCRBY', sizes, 'n', 1)
  redis.call('HINCRBY', sizes, 'b', bytes)
  redis.call('HINCRBY', sizes, 'n:' .. hook, 1)
  redis.call('HINCRBY', sizes, 'b:' .. hook, bytes)
  return 1
end
local function full(sizes, payload, maxHeld, maxBytes)
  if tonumber(redis.call('HGET', sizes, 'n') or '0') >= tonumber(maxHeld) then return -1 end
  if tonumber(redis.call('HGET', sizes, 'b') or '0') + string.len(payload) > tonumber(maxBytes) then return -2 end
  return 0
end`;

// A new entry held (not through the stream): caps checked, then held. -1/-2: full by count/bytes.
const HOLD_NEW = script(`${HOLD_FUNCTION}
local refused = full(KEYS[2], ARGV[2], ARGV[3], ARGV[4])
if refused ~= 0 then return refused end
return hold(KEYS[1], KEYS[2], ARGV[1], redis.call('INCR', KEYS[3]), ARGV[2])`);

// A taken entry handed back: held at its arrival number (caps not checked: it was acknowledged
// long ago), and confirmed on the stream in the same step, so no other taker can find it there.
const HOLD_TAKEN = script(`${HOLD_FUNCTION}
local seq = ARGV[3]
if seq == '' then seq = redis.call('INCR', KEYS[4]) end
hold(KEYS[2], KEYS[3], ARGV[1], seq, ARGV[2])
redis.call('XACK', KEYS[1], ARGV[5], ARGV[4])
redis.call('XDEL', KEYS[1], ARGV[4])
return 1`);

// The hook's oldest held entry back to the stream, if it is still the one the caller looked at
// (another instance may have moved it meanwhile): 1 moved, 0 not. Field b: its budget was counted.
const RELEASE = script(`
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #head == 0 or head[1] ~= ARGV[1] then return 0 end
redis.call('ZREM', KEYS[1], head[1])
local bytes = string.len(head[1])
redis.call('HINCRBY', KEYS[2], 'n', -1)
redis.call('HINCRBY', KEYS[2], 'b', -bytes)
redis.call('HINCRBY', KEYS[2], 'n:' .. ARGV[3], -1)
redis.call('HINCRBY', KEYS[2], 'b:' .. ARGV[3], -bytes)
if ARGV[2] == '1' then
  redis.call('XADD', KEYS[3], '*', 'a', head[1], 's', head[2], 'b', '1')
else
  redis.call('XADD', KEYS[3], '*', 'a', head[1], 's', head[2])
end
return 1`);

/** Runs a script on the queue's connection (action-queue.ts: EVALSHA, then EVAL once). */
export type ScriptRunner = (
  lua: { sha: string; source: string },
  keys: string[],
  args: (string | number)[],
) => Promise<unknown>;

/** The held counts read from Redis. */
export interface HeldCounts {
  total: number;
  bytes: number;
  byHook: Map<string, number>;
}

/** A cap as Lua reads it: a number, however large (Infinity is not one). */
export const heldCap = (n: number): string => (Number.isFinite(n) ? String(n) : '1e300');

export class HeldStore {
  readonly #keys: HeldKeys;

  constructor(
    private readonly stream: string,
    private readonly group: string,
    private readonly run: ScriptRunner,
    private readonly hgetall: (key: string) => Promise<Record<string, string>>,
    private readonly zrange: (key: string) => Promise<string[]>,
  ) {
    this.#keys = heldKeys(stream);
  }

  /** Holds a new entry; throws 503 paused_full past either cap (across every instance). */
  async holdNew(hook: string, payload: string, maxHeld: number, maxHeldBytes: number): Promise<void> {
    const held = await this.run(
      HOLD_NEW,
      [this.#keys.of(hook), this.#keys.sizes, this.#keys.arrivals],
      [hook, payload, heldCap(maxHeld), heldCap(maxHeldBytes)],
    );
    if (held === -1) throw refuse.pausedFull(maxHeld, HELD_FULL_RETRY_SECONDS);
    if (held === -2) throw refuse.pausedFullBytes(maxHeldBytes, HELD_FULL_RETRY_SECONDS);
  }

  /** Hands a taken entry back to its hook's held entries, confirming it on the stream in one step. */
  async holdTaken(hook: string, streamId: string, payload: string, seq: number | undefined): Promise<void> {
    await this.run(
      HOLD_TAKEN,
      [this.stream, this.#keys.of(hook), this.#keys.sizes, this.#keys.arrivals],
      [hook, payload, seq === undefined ? '' : String(seq), streamId, this.group],
    );
  }

  /** The hook's oldest held entry, or undefined when it holds none. */
  async oldest(hook: string): Promise<string | undefined> {
    return (await this.zrange(this.#keys.of(hook)))[0];
  }

  /** Moves `payload` to the stream if it is still the hook's oldest; false when it was not. */
  async release(hook: string, payload: string, budgeted: boolean): Promise<boolean> {
    const moved = await this.run(
      RELEASE,
      [this.#keys.of(hook), this.#keys.sizes, this.stream],
      [payload, budgeted ? '1' : '0', hook],
    );
    return moved === 1;
  }

  async counts(): Promise<HeldCounts> {
    const fields = await this.hgetall(this.#keys.sizes);
    const byHook = new Map<string, number>();
    for (const [field, value] of Object.entries(fields)) {
      const n = Number(value);
      if (field.startsWith('n:') && n > 0) byHook.set(field.slice(2), n);
    }
    return { total: Math.max(0, Number(fields.n ?? 0)), bytes: Math.max(0, Number(fields.b ?? 0)), byHook };
  }
}
