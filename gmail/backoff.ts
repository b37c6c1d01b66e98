// Capped exponential backoff with jitter, and a sleep that a stop cuts short. A failure is retried
// after 1 s, 2 s, 4 s … up to the cap, never in a tight loop; a success resets it.

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 5 * 60_000 };

export class Backoff {
  #attempt = 0;

  constructor(private readonly options: BackoffOptions = DEFAULT_BACKOFF) {}

  get attempts(): number {
    return this.#attempt;
  }

  /** The next delay: doubling from initialMs, capped, with ±20 % jitter so instances do not march in step. */
  next(): number {
    const base = Math.min(this.options.maxMs, this.options.initialMs * 2 ** Math.min(this.#attempt, 30));
    this.#attempt++;
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  reset(): void {
    this.#attempt = 0;
  }
}

/** Resolves after ms, or at once when signal aborts (it never rejects). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
