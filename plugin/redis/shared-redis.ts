// The plugin's connection to Redis for state shared by several instances (hooks.sharedState): one
// connection for commands, one for pub/sub. Requests never wait for a connection: while Redis is
// unreachable commands fail at once (no offline queue), callers fall back to local state, one
// warning is logged per outage, and the client reconnects with a backoff on its own. A Redis that
// hangs rather than refuses (a long command, a stopped process) counts as down from its first
// command timeout: callers then stop sending it requests' commands until a PING answers again.
import { setTimeout as delay } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../host.ts';
import type { Script } from './redis-script.ts';

/** How long start waits for Redis before serving on local state. */
const START_WAIT_MS = 1000;
/** Bound on every command, so a Redis that hangs (rather than refuses) cannot hold a request. */
const COMMAND_TIMEOUT_MS = 500;
/** While down on a live connection (Redis hung), a PING is tried this often. */
const PROBE_MS = 200;
/** ioredis's message for a command past commandTimeout. */
const TIMED_OUT = 'Command timed out';

const OPTIONS: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: COMMAND_TIMEOUT_MS,
  connectTimeout: 2000,
  autoResubscribe: false,
  enableAutoPipelining: true,
  // 100 ms, 200 ms, ... up to 2 s between attempts, for as long as it takes.
  retryStrategy: (times) => Math.min(100 * times, 2000),
};

type ReadyTask = () => Promise<void>;

export interface SharedStateConfig {
  /** May carry a password: never logged nor answered. */
  readonly url: string;
  readonly keyPrefix: string;
}

export class SharedRedis {
  readonly commands: Redis;
  readonly #subscriber: Redis;
  readonly #channels = new Map<string, (message: string) => void>();
  readonly #readyTasks: ReadyTask[] = [];
  /** Where Redis is, without the URL's credentials: the only thing logged of it. */
  readonly #endpoint: string;
  #state: 'starting' | 'up' | 'down' = 'starting';
  #closed = false;
  #probing = false;
  /** Ends the wait at start: up, or found down. */
  #started: (() => void) | undefined;

  constructor(
    private readonly config: SharedStateConfig,
    private readonly logger: Logger,
    /** Told each time shared state comes up or goes down (the shared_state_up gauge). */
    private readonly onState: (up: boolean) => void = () => {},
    /** False when another owner of the same Redis (the queue) logs its outages: one warning each. */
    private readonly logOutages = true,
  ) {
    this.#endpoint = new URL(config.url).host;
    this.commands = new Redis(config.url, OPTIONS);
    this.#subscriber = new Redis(config.url, OPTIONS);
    for (const client of [this.commands, this.#subscriber]) {
      // Errors show as 'close' below; an 'error' without a listener would be printed by the client.
      client.on('error', () => {});
      client.on('close', () => this.#down());
      client.on('ready', () => void this.#connected());
    }
    this.#subscriber.on('message', (channel: string, message: string) => this.#channels.get(channel)?.(message));
  }

  /**
   * Connects, once subscribe() and onReady() have been given, waiting at most START_WAIT_MS (less if
   * Redis refuses): an instance whose Redis is down starts on local state and goes over to Redis once
   * it answers.
   */
  async connect(): Promise<void> {
    const settled = new Promise<void>((resolve) => (this.#started = resolve));
    this.commands.connect().catch(() => {});
    this.#subscriber.connect().catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise((resolve) => (timer = setTimeout(resolve, START_WAIT_MS)))]);
    clearTimeout(timer);
    if (this.#state === 'starting') this.#down();
  }

  /** Redis answers and this instance is subscribed: shared state is in use. */
  get up(): boolean {
    return this.#state === 'up';
  }

  /** A key or channel name under hooks.sharedState.keyPrefix. */
  key(name: string): string {
    return this.config.keyPrefix + name;
  }

  /** Messages on `channel` (a key()) go to `handler`; subscribed again on every reconnect. */
  subscribe(channel: string, handler: (message: string) => void): void {
    this.#channels.set(channel, handler);
  }

  /** Runs on every (re)connection before shared state counts as up, e.g. to load what others wrote. */
  onReady(task: ReadyTask): void {
    this.#readyTasks.push(task);
  }

  /**
   * Runs a Lua script by its digest, sending it once per server (after a restart, again). A timeout
   * marks shared state down (the script may still run once Redis wakes).
   */
  script(lua: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.#evalScript(lua, keys, args).catch((err: unknown) => {
      if ((err as Error).message === TIMED_OUT) this.#down();
      throw err;
    });
  }

  async #evalScript(lua: Script, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.commands.evalsha(lua.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return this.commands.eval(lua.source, keys.length, ...keys, ...args);
    }
  }

  close(): void {
    this.#closed = true;
    this.commands.disconnect();
    this.#subscriber.disconnect();
  }

  async #connected(): Promise<void> {
    if (this.commands.status !== 'ready' || this.#subscriber.status !== 'ready') return;
    try {
      if (this.#channels.size) await this.#subscriber.subscribe(...this.#channels.keys());
      for (const task of this.#readyTasks) await task();
    } catch {
      // Lost again meanwhile: the next 'ready' tries again.
      return;
    }
    if (this.commands.status !== 'ready' || this.#subscriber.status !== 'ready' || this.#closed) return;
    if (this.#state === 'down' && this.logOutages)
      this.logger.info('shared state on Redis is back', { redis: this.#endpoint });
    this.#state = 'up';
    this.onState(true);
    this.#started?.();
  }

  #down(): void {
    if (this.#closed || this.#state === 'down') return;
    this.#state = 'down';
    this.onState(false);
    this.#started?.();
    if (this.logOutages)
      this.logger.warn('shared state on Redis unavailable; serving on local state until it is back', {
        redis: this.#endpoint,
      });
    void this.#probe();
  }

  /**
   * A connection that stays open while Redis does not answer brings no 'ready' to end the outage:
   * a PING does, once Redis answers it within the command timeout. A lost connection is left to the
   * client's reconnection.
   */
  async #probe(): Promise<void> {
    if (this.#probing) return;
    this.#probing = true;
    try {
      while (!this.#closed && this.#state === 'down') {
        await delay(PROBE_MS, undefined, { ref: false });
        if (this.commands.status !== 'ready') continue;
        try {
          await this.commands.ping();
        } catch {
          continue;
        }
        await this.#connected();
      }
    } finally {
      this.#probing = false;
    }
  }
}
