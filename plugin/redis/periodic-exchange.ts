// What an instance counts locally and shares through Redis on a timer (rate limits, budgets): one
// exchange at a time and none while Redis is down, so no request ever waits on Redis for it.
import type { SharedRedis } from './shared-redis.ts';

/** At least once a second, as the design asks; twice, so a window of one second hears others in time. */
export const EXCHANGE_MS = 500;

export class PeriodicExchange {
  readonly #timer: NodeJS.Timeout;
  #running = false;

  constructor(
    private readonly redis: Pick<SharedRedis, 'up'>,
    private readonly once: () => Promise<void>,
  ) {
    this.#timer = setInterval(() => void this.run(), EXCHANGE_MS);
    this.#timer.unref();
  }

  /** One exchange now; skipped while Redis is down or one is under way. */
  async run(): Promise<void> {
    if (this.#running || !this.redis.up) return;
    this.#running = true;
    try {
      await this.once();
    } finally {
      this.#running = false;
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
