// Requests refused before their token was accepted (400 token_in_query, 405, 429, 401) can come from
// anyone, as fast as they can send them: one log line each would let a flood fill the disk and cost
// more than answering. The first few each second are logged one by one; the rest are counted and
// reported in one line when the second is over.
import type { LogFields, Logger } from '../host.ts';
import { LineBudget } from '../observe/line-budget.ts';

export const REFUSALS_LOGGED_PER_SECOND = 10;

export class RefusalLog {
  readonly #budget: LineBudget;
  #unlogged = 0;
  #unauthorized = 0;
  #rateLimited = 0;

  constructor(
    private readonly logger: Logger,
    now: () => number = Date.now,
  ) {
    this.#budget = new LineBudget(REFUSALS_LOGGED_PER_SECOND, () => this.flush(), now);
  }

  /** Logs the refusal as 'hook request' (the line every request gets) or counts it for the summary. */
  note(fields: LogFields & { status: number }): void {
    if (this.#budget.take()) {
      this.logger.info('hook request', fields);
      return;
    }
    this.#unlogged++;
    if (fields.status === 401) this.#unauthorized++;
    else if (fields.status === 429) this.#rateLimited++;
  }

  /** Reports what was counted and not yet reported (also called when the plugin closes). */
  flush(): void {
    this.#budget.reported();
    if (this.#unlogged === 0) return;
    this.logger.warn('hook requests refused before authentication were counted, not logged one by one', {
      count: this.#unlogged,
      unauthorized: this.#unauthorized,
      rateLimited: this.#rateLimited,
      other: this.#unlogged - this.#unauthorized - this.#rateLimited,
    });
    this.#unlogged = 0;
    this.#unauthorized = 0;
    this.#rateLimited = 0;
  }
}
