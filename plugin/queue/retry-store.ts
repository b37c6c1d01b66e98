// Runs waiting for their next try, on the queue's Redis (hooks.queue): a sorted set beside the
// stream, scored by when each is due, so no assistant's memory or disk holds them and one that dies
// takes none along. Every taker looks for due entries (at the earliest one's time, and at least once
// a second for entries another instance added) and moves them onto the stream in one script, each
// once; whichever taker is free then carries the try out (actions/queued-actions.ts). What an entry
// holds is the caller's; this file moves strings.
import { script } from '../redis/redis-script.ts';
import type { ScriptRunner } from './held-store.ts';

/** Moved at most at a time; more due are moved on the next look, at once. */
const BATCH = 100;
/** The longest a taker goes without looking (another instance's entries are found this late). */
const LOOK_MS = 1000;
/** The soonest a taker looks again after a look (however soon the next entry is due). */
const MIN_LOOK_MS = 20;

// Due entries (score <= now) to the stream, oldest due first: [moved, the next due time or -1].
const MOVE_DUE = script(`
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  redis.call('ZREM', KEYS[1], member)
  redis.call('XADD', KEYS[2], '*', 'a', member)
end
local next = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #next == 0 then return {#due, -1} end
return {#due, next[2]}`);

export class RetryStore {
  readonly #key: string;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  #moving = false;
  #closed = false;

  constructor(
    private readonly stream: string,
    private readonly run: ScriptRunner,
    private readonly zadd: (key: string, score: number, member: string) => Promise<unknown>,
  ) {
    this.#key = `${stream}:retries`;
  }

  /** Keeps the entry until dueAt; resolves once Redis has it. */
  async schedule(payload: string, dueAt: number): Promise<void> {
    await this.zadd(this.#key, dueAt, payload);
    this.#lookAt(dueAt);
  }

  /** A taker's part: moves due entries onto the stream from now until close(). */
  startMoving(): void {
    this.#lookAt(Date.now());
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  /** Looks at `at` (or sooner, if a look is set for sooner), never later than a second from now. */
  #lookAt(at: number): void {
    if (this.#closed) return;
    const when = Math.min(at, Date.now() + LOOK_MS);
    if (this.#timer && this.#timerAt <= when) return;
    clearTimeout(this.#timer);
    this.#timerAt = when;
    this.#timer = setTimeout(() => void this.#move(), Math.max(0, when - Date.now()));
    this.#timer.unref();
  }

  async #move(): Promise<void> {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    if (this.#moving || this.#closed) return;
    this.#moving = true;
    let next = Date.now() + LOOK_MS;
    try {
      const [moved, nextDue] = (await this.run(MOVE_DUE, [this.#key, this.stream], [Date.now(), BATCH])) as [
        number,
        number | string,
      ];
      const nextAt = Number(nextDue);
      if (moved >= BATCH) next = Date.now();
      else if (nextAt >= 0) next = nextAt;
    } catch {
      // Redis away: the queue says the outage once; looked at again a second later.
    } finally {
      this.#moving = false;
    }
    this.#lookAt(Math.max(next, Date.now() + MIN_LOOK_MS));
  }
}
