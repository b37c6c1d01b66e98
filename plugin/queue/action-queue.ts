// The queue on Redis (hooks.queue): a thin adapter over a Redis stream and one consumer group, through
// ioredis. Doors add (one script: the waiting count checked, then XADD), takers read (XREADGROUP),
// renew the lease on what they hold (XCLAIM JUSTID), take a dead taker's entries (XAUTOCLAIM past one
// lease) and confirm (XACK and XDEL in one MULTI). docs/performance.md says why Streams and not
// BullMQ. What an entry holds is the caller's (actions/queued-actions.ts); this file moves strings.
import { setTimeout as delay } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import { refuse, HookError } from '../errors.ts';
import type { Logger } from '../host.ts';
import { errorMessage } from '../util/errors.ts';
import { script, type Script } from '../redis/redis-script.ts';
import { persistenceWarnings } from './redis-persistence.ts';
import { QueueHealth } from './queue-health.ts';
import { RetryStore } from './retry-store.ts';
import { HELD_FULL_RETRY_SECONDS, HOLD_FUNCTION, HeldStore, heldCap, heldKeys } from './held-store.ts';
import type { QueueSettings } from './queue-settings.ts';

/** One entry taken: its stream id, and what the door added (undefined when it was deleted meanwhile). */
export interface TakenEntry {
  readonly streamId: string;
  readonly payload: string | undefined;
  /** Its arrival number (held-store.ts), when the door gave it one. */
  readonly seq?: number;
  /** Released from the held entries with its runs counted against their budgets already. */
  readonly budgeted?: boolean;
}

/** Carries out one entry; resolves once it took effect. A HookError is a refusal: never tried again. */
export type TakeHandler = (entry: TakenEntry) => Promise<void>;

const GROUP = 'takers';
/** Entries read at a time: the lease renewal covers them all. */
const BATCH = 100;
/** A blocked read ends this often, so a close or a lost connection is noticed. */
const BLOCK_MS = 1000;
/** Retry-After of a 503 queue_unavailable and of a 503 queue_full. */
const UNAVAILABLE_RETRY_SECONDS = 5;
const FULL_RETRY_SECONDS = 30;

// Every entry draws an arrival number (its place should it be held later). Held when asked (the
// hook is paused) or when its hook holds entries already (newer ones wait behind them): 2, or -1/-2
// when the held caps are reached. Else added: waiting = the stream's length less what takers hold
// (XPENDING's summary, constant time with few takers), 1, or 0 when full. All in one round trip.
const ADD = script(`${HOLD_FUNCTION}
local seq = redis.call('INCR', KEYS[4])
if ARGV[5] == '1' or redis.call('ZCARD', KEYS[2]) > 0 then
  local refused = full(KEYS[3], ARGV[2], ARGV[6], ARGV[7])
  if refused ~= 0 then return refused end
  hold(KEYS[2], KEYS[3], ARGV[4], seq, ARGV[2])
  return 2
end
local waiting = redis.call('XLEN', KEYS[1])
if waiting > 0 then
  local pending = redis.pcall('XPENDING', KEYS[1], ARGV[3])
  if type(pending) == 'table' and type(pending[1]) == 'number' then waiting = waiting - pending[1] end
end
if waiting >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], '*', 'a', ARGV[2], 's', seq)
return 1`);

/** How a door's entry is held when its hook is paused, and the caps that bound the held entries. */
export interface HoldAsked {
  readonly paused: boolean;
  readonly maxHeld: number;
  readonly maxHeldBytes: number;
}

const BASE: RedisOptions = {
  lazyConnect: true,
  // Nothing waits for a connection: a door answers 503 at once while Redis is away.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  connectTimeout: 2000,
  enableAutoPipelining: true,
  retryStrategy: (times) => Math.min(100 * times, 2000),
};

export class ActionQueue {
  readonly #commands: Redis;
  /** Blocking reads hold their connection: a taker's own. */
  #reader: Redis | undefined;
  readonly #stream: string;
  readonly #health: QueueHealth;
  #closed = false;
  #retries: RetryStore | undefined;
  #taking: Promise<void> | undefined;
  #reclaimTimer: NodeJS.Timeout | undefined;
  /** Handling is one entry at a time, in the order read: arrival order per hook. */
  #chain: Promise<void> = Promise.resolve();
  /** Batches read and not yet carried out. */
  #handling = 0;

  constructor(
    private readonly settings: QueueSettings,
    private readonly logger: Logger,
    onState: (up: boolean) => void = () => {},
  ) {
    this.#stream = `${settings.keyPrefix}queue:${settings.name}`;
    this.#health = new QueueHealth(new URL(settings.url).host, logger, onState);
    this.#commands = this.#client({ commandTimeout: settings.timeoutMs });
  }

  /** Connects (waiting at most the timeout), makes the group, and warns of a Redis that may lose work. */
  async connect(): Promise<void> {
    const ready = this.#commands.connect().catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ready, new Promise((resolve) => (timer = setTimeout(resolve, this.settings.timeoutMs)))]);
    clearTimeout(timer);
    if (this.#commands.status !== 'ready') return;
    await this.#ensureGroup().catch(() => {});
    for (const warning of await persistenceWarnings(this.#commands)) this.logger.warn(warning, {});
  }

  /**
   * Resolves once Redis has taken the entry: 'queued', or 'held' (its hook is paused, or holds older
   * entries). Throws 503 queue_full past maxWaiting, 503 paused_full past a held cap, or 503
   * queue_unavailable when Redis does not take it within the timeout.
   */
  async add(payload: string, hook: string, hold: HoldAsked): Promise<'queued' | 'held'> {
    let added: unknown;
    const keys = heldKeys(this.#stream);
    try {
      added = await this.#script(
        ADD,
        [this.#stream, keys.of(hook), keys.sizes, keys.arrivals],
        [
          this.settings.maxWaiting,
          payload,
          GROUP,
          hook,
          hold.paused ? '1' : '0',
          heldCap(hold.maxHeld),
          heldCap(hold.maxHeldBytes),
        ],
      );
    } catch (err) {
      this.#failed(err);
      throw refuse.queueUnavailable(UNAVAILABLE_RETRY_SECONDS);
    }
    this.#health.ready();
    if (added === 0) throw refuse.queueFull(this.settings.maxWaiting, FULL_RETRY_SECONDS);
    if (added === -1) throw refuse.pausedFull(hold.maxHeld, HELD_FULL_RETRY_SECONDS);
    if (added === -2) throw refuse.pausedFullBytes(hold.maxHeldBytes, HELD_FULL_RETRY_SECONDS);
    return added === 2 ? 'held' : 'queued';
  }

  /** The held entries beside this queue's stream, on its connection. */
  held(): HeldStore {
    return new HeldStore(
      this.#stream,
      GROUP,
      (lua, keys, args) => this.#script(lua, keys, args),
      (key) => this.#commands.hgetall(key),
      (key) => this.#commands.zrange(key, '0', '0'),
    );
  }

  /** Runs waiting for their next try, beside this queue's stream (one store per queue). */
  retries(): RetryStore {
    this.#retries ??= new RetryStore(
      this.#stream,
      (lua, keys, args) => this.#script(lua, keys, args),
      (key, score, member) => this.#commands.zadd(key, score, member),
    );
    return this.#retries;
  }

  /** A key of the records kept beside the queue (failures, run states): under its prefix and name. */
  key(what: string): string {
    return `${this.settings.keyPrefix}${what}:${this.settings.name}`;
  }

  /** Whether the queue's Redis answered last. */
  get up(): boolean {
    return this.#health.up;
  }

  /**
   * One command on the records kept beside the queue; throws 503 queue_unavailable, saying what was
   * asked, when Redis does not answer within the timeout.
   */
  async command(what: string, name: string, ...args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#commands.call(name, ...args);
    } catch (err) {
      throw this.#unavailable(err, what);
    }
  }

  /** A script on those records (redis-script.ts), with command()'s answer when Redis is away. */
  async script(what: string, lua: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.#script(lua, keys, args);
    } catch (err) {
      throw this.#unavailable(err, what);
    }
  }

  /**
   * Takes entries as `consumer` until close(): first what this consumer held before a restart, then
   * new entries; every half lease, entries another taker held past a lease.
   */
  take(consumer: string, handle: TakeHandler): void {
    this.#reader = this.#client({});
    this.#reader.connect().catch(() => {});
    this.#taking = this.#readLoop(consumer, handle);
    this.#reclaimTimer = setInterval(
      () => void this.#reclaim(consumer, handle),
      Math.max(500, Math.floor(this.settings.leaseMs / 2)),
    );
    this.#reclaimTimer.unref();
    // Takers move runs whose next try is due onto the stream.
    this.retries().startMoving();
  }

  /**
   * Stops taking: the entry being carried out finishes (and is confirmed) first; the rest of what was
   * read stays pending, taken again after its lease. The connection stays for what ends after.
   */
  async stopTaking(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#reclaimTimer);
    this.#retries?.close();
    this.#reader?.disconnect();
    await this.#taking;
    await this.#chain;
  }

  /** Once nothing writes to Redis any more (the runs' last states, the failures' pushes). */
  async close(): Promise<void> {
    await this.stopTaking();
    this.#commands.disconnect();
  }

  #client(extra: RedisOptions): Redis {
    const client = new Redis(this.settings.url, { ...BASE, ...extra });
    // Errors show as 'close'; an 'error' without a listener would be printed by the client.
    client.on('error', () => {});
    client.on('close', () => {
      if (!this.#closed) this.#health.down();
    });
    client.on('ready', () => {
      if (this.#commands.status === 'ready' && (this.#reader === undefined || this.#reader.status === 'ready'))
        this.#health.ready();
    });
    return client;
  }

  async #ensureGroup(): Promise<void> {
    try {
      // From the start: entries a door added before any taker came are taken too.
      await this.#commands.xgroup('CREATE', this.#stream, GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!errorMessage(err).startsWith('BUSYGROUP')) throw err;
    }
  }

  async #script(lua: Script, keys: string[], args: (string | number)[]) {
    try {
      return await this.#commands.evalsha(lua.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!errorMessage(err).startsWith('NOSCRIPT')) throw err;
      return this.#commands.eval(lua.source, keys.length, ...keys, ...args);
    }
  }

  /** A Redis error (a script's own included) as the 503 its caller answers; the error is not shown. */
  #unavailable(err: unknown, what: string): HookError {
    this.#failed(err);
    return refuse.queueUnavailable(
      UNAVAILABLE_RETRY_SECONDS,
      `${what}: the queue's Redis did not answer; try again later`,
    );
  }

  /** A command timed out (a hung Redis) or the connection is gone: one warning per outage. */
  #failed(err: unknown): void {
    const message = errorMessage(err);
    if (message === 'Command timed out' || this.#commands.status !== 'ready') this.#health.down();
  }

  async #readLoop(consumer: string, handle: TakeHandler): Promise<void> {
    // After a restart: what this taker held and had not confirmed, before anything new.
    let own = true;
    // Own entries are read past the last one seen, so one that keeps failing is not read in a loop.
    let ownFrom = '0';
    while (!this.#closed) {
      const reader = this.#reader!;
      if (reader.status !== 'ready' || this.#commands.status !== 'ready') {
        await delay(100, undefined, { ref: false });
        continue;
      }
      let entries: TakenEntry[];
      try {
        const args: (string | number)[] = ['GROUP', GROUP, consumer, 'COUNT', BATCH];
        if (!own) args.push('BLOCK', BLOCK_MS);
        const reply = await reader.call('XREADGROUP', ...args, 'STREAMS', this.#stream, own ? ownFrom : '>');
        entries = parseEntries(streamEntries(reply));
      } catch (err) {
        if (this.#closed) return;
        if (errorMessage(err).startsWith('NOGROUP')) await this.#ensureGroup().catch(() => {});
        else await delay(200, undefined, { ref: false });
        continue;
      }
      if (own && entries.length === 0) {
        own = false;
        continue;
      }
      if (own) ownFrom = entries[entries.length - 1]!.streamId;
      await this.#handleInOrder(consumer, entries, handle);
    }
  }

  /** Entries held past a lease by a taker that died or stalled become this taker's. */
  async #reclaim(consumer: string, handle: TakeHandler): Promise<void> {
    // While this taker carries entries out it takes no others': reclaimed ones would wait behind
    // them unrenewed, and lapse to another taker again.
    if (this.#closed || this.#handling > 0 || this.#commands.status !== 'ready') return;
    let entries: TakenEntry[];
    try {
      const reply = (await this.#commands.call(
        'XAUTOCLAIM',
        this.#stream,
        GROUP,
        consumer,
        this.settings.leaseMs,
        '0-0',
        'COUNT',
        BATCH,
      )) as [string, [string, string[] | null][], string[]?];
      entries = parseEntries(reply[1]);
      // Entries deleted while pending (Redis 7 lists them apart): nothing left to carry out.
      if (reply[2]?.length) await this.#commands.xack(this.#stream, GROUP, ...reply[2]);
    } catch {
      return;
    }
    if (entries.length) await this.#handleInOrder(consumer, entries, handle);
  }

  #handleInOrder(consumer: string, entries: TakenEntry[], handle: TakeHandler): Promise<void> {
    this.#handling++;
    const run = this.#chain.then(() => this.#handle(consumer, entries, handle));
    this.#chain = run.catch(() => {}).finally(() => this.#handling--);
    return this.#chain;
  }

  /** Each entry carried out and confirmed; the lease on those not yet confirmed renewed meanwhile. */
  async #handle(consumer: string, entries: TakenEntry[], handle: TakeHandler): Promise<void> {
    const held = new Set(entries.map((e) => e.streamId));
    const renew = setInterval(
      () => {
        if (held.size === 0 || this.#commands.status !== 'ready') return;
        this.#commands.xclaim(this.#stream, GROUP, consumer, 0, ...held, 'JUSTID').catch(() => {});
      },
      Math.max(200, Math.floor(this.settings.leaseMs / 3)),
    );
    renew.unref();
    const confirms: Promise<unknown>[] = [];
    try {
      for (const entry of entries) {
        // Stopping: what is left stays pending for the next taker (or this one restarted).
        if (this.#closed) break;
        if (entry.payload !== undefined) {
          try {
            await handle(entry);
          } catch (err) {
            // A refusal the handler did not keep (it keeps a policy's as a failure) will not pass
            // later either: dropped, and said. Anything else (a 5xx refusal too: shutting down,
            // overloaded) stays unconfirmed and is taken again after the lease.
            if (!(err instanceof HookError) || err.status >= 500) {
              this.logger.warn('a queued action could not be carried out; it will be taken again', {
                entry: entry.streamId,
                error: errorMessage(err),
              });
              continue;
            }
            this.logger.warn('a queued action was refused here and is dropped', {
              entry: entry.streamId,
              code: err.code,
            });
          }
        }
        held.delete(entry.streamId);
        confirms.push(this.#confirm(entry.streamId));
      }
      await Promise.all(confirms);
    } finally {
      clearInterval(renew);
    }
  }

  /** Confirmed and gone in one step: no other taker can find it afterwards. */
  async #confirm(streamId: string): Promise<void> {
    try {
      await this.#commands.multi().xack(this.#stream, GROUP, streamId).xdel(this.#stream, streamId).exec();
    } catch {
      // Left pending: taken again after the lease, and found done by the taker's durable dedupe.
    }
  }
}

/** XREADGROUP's entries of the one stream asked for; none when a blocked read ended empty. */
function streamEntries(reply: unknown): [string, string[] | null][] {
  if (!Array.isArray(reply) || reply.length === 0) return [];
  // [[stream, entries]] as Redis sends it; [stream, entries] as ioredis's call() gives one stream.
  const pair = (typeof reply[0] === 'string' ? reply : reply[0]) as [string, [string, string[] | null][]];
  return Array.isArray(pair[1]) ? pair[1] : [];
}

function parseEntries(raw: [string, string[] | null][]): TakenEntry[] {
  return raw.map(([streamId, fields]) => {
    if (!fields) return { streamId, payload: undefined };
    const seq = Number(fieldOf(fields, 's'));
    return {
      streamId,
      payload: fieldOf(fields, 'a'),
      ...(Number.isSafeInteger(seq) && seq > 0 ? { seq } : {}),
      ...(fieldOf(fields, 'b') === '1' ? { budgeted: true } : {}),
    };
  });
}

function fieldOf(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
