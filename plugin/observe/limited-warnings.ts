// Warnings that anyone can cause as fast as they can send (a refused push from a watcher, an address locked
// after failed proofs from many addresses): one line each would let a flood fill the disk. Each
// message gets its first few lines each second; the rest are counted and reported in one line per
// message when the second is over. Info and error lines pass through: only the warnings a stranger
// can cause are sent here.
import type { LogFields, Logger } from '../host.ts';
import { LineBudget } from './line-budget.ts';

export const WARNINGS_LOGGED_PER_SECOND = 10;

interface Bucket {
  budget: LineBudget;
  unlogged: number;
}

export class LimitedWarnings implements Logger {
  /** Keyed by message: the messages are fixed sentences, so the map stays small. */
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  info(msg: string, fields?: LogFields): void {
    this.logger.info(msg, fields);
  }

  error(msg: string, fields?: LogFields): void {
    this.logger.error(msg, fields);
  }

  warn(msg: string, fields?: LogFields): void {
    let bucket = this.#buckets.get(msg);
    if (!bucket) {
      bucket = { budget: new LineBudget(WARNINGS_LOGGED_PER_SECOND, () => this.flush(), this.now), unlogged: 0 };
      this.#buckets.set(msg, bucket);
    }
    if (bucket.budget.take()) this.logger.warn(msg, fields);
    else bucket.unlogged++;
  }

  /** Reports what was counted and not yet reported (also called when the owner closes). */
  flush(): void {
    // The budgets stay: a second's budget is not renewed by reporting what went past it.
    for (const [msg, bucket] of this.#buckets) {
      bucket.budget.reported();
      if (bucket.unlogged === 0) continue;
      this.logger.warn('warnings counted, not logged one by one', { warning: msg, count: bucket.unlogged });
      bucket.unlogged = 0;
    }
  }
}
