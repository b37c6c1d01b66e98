// Held actions with the queue (hooks.queue): held in Redis beside the queue (queue/held-store.ts),
// not in this instance's held.jsonl, so every door and assistant counts the same held actions and
// none is lost with the instance that held it. A resume anywhere releases them: every instance that
// sees its hook resumed moves the hook's oldest entries back onto the stream one at a time (each
// move one script, so instances draining together neither repeat nor reorder), and whichever taker
// is free carries them out. A budget that holds is asked before each move: the move counts the
// runs (the budget book is shared), and the drain stops until a window ends (onFree) or the next
// sweep. The sweep (every second) also drains what was held behind a resume that had just ended.
import { randomUUID } from 'node:crypto';
import type { Action } from '../action.ts';
import type { Logger } from '../host.ts';
import type { BudgetBook } from '../budgets/budget-book.ts';
import type { TakenAction } from '../actions/queued-actions.ts';
import type { HeldStore } from '../queue/held-store.ts';
import { errorMessage } from '../util/errors.ts';

/** How often the held counts are read again and resumed hooks that still hold are drained. */
const SWEEP_MS = 1000;

export class QueuedHolds {
  #counts = new Map<string, number>();
  #total = 0;
  readonly #draining = new Map<string, Promise<void>>();
  #sweep: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly store: HeldStore,
    private readonly isPaused: (hook: string) => boolean,
    private readonly logger: Logger,
    private readonly budgets?: Pick<BudgetBook, 'take'>,
  ) {}

  /** Held in all, across every instance (as last read). */
  get size(): number {
    return this.#total;
  }

  /** Held for the hook, across every instance (as last read). */
  countFor(hook: string): number {
    return this.#counts.get(hook) ?? 0;
  }

  /** The hooks holding something (as last read). */
  hooks(): string[] {
    return [...this.#counts.keys()];
  }

  /** Starts the sweep; a first one at once. */
  start(): void {
    this.#sweep = setInterval(() => void this.#sweepOnce(), SWEEP_MS);
    this.#sweep.unref();
    void this.#sweepOnce();
  }

  /** Reads the counts again (an admin answer shows what Redis holds now). */
  async refresh(): Promise<void> {
    try {
      const counts = await this.store.counts();
      this.#counts = counts.byHook;
      this.#total = counts.total;
    } catch {
      // Redis away: the last counts stand (the queue says the outage).
    }
  }

  /** A new action held (a batch that closed while paused); 503 paused_full past the caps. */
  async hold(hook: string, requestId: string, action: Action, maxHeld: number, maxHeldBytes: number): Promise<void> {
    await this.store.holdNew(
      hook,
      JSON.stringify({ id: randomUUID(), hook, requestId, action }),
      maxHeld,
      maxHeldBytes,
    );
    this.#counted(hook);
    if (!this.isPaused(hook)) this.drain(hook);
  }

  /** A taken action handed back, in its place; its entry on the stream confirmed in the same step. */
  async holdTaken(taken: TakenAction): Promise<void> {
    await this.store.holdTaken(taken.hook, taken.streamId, taken.payload, taken.seq);
    this.#counted(taken.hook);
    // Resumed meanwhile: it goes back to the queue at once.
    if (!this.isPaused(taken.hook)) this.drain(taken.hook);
  }

  /** Moves the hook's held actions back onto the queue, oldest first, while it stays resumed. */
  drain(hook: string): void {
    if (this.#closed || this.#draining.has(hook)) return;
    const drain = this.#drainOnce(hook)
      .catch((err: unknown) => {
        // Left held: the next sweep tries again.
        this.logger.warn('held actions could not be released yet; trying again', { hook, reason: errorMessage(err) });
      })
      .finally(() => this.#draining.delete(hook));
    this.#draining.set(hook, drain);
  }

  /** Every resumed hook that holds something (a budget's window ended). */
  drainAll(): void {
    for (const hook of this.hooks()) if (!this.isPaused(hook)) this.drain(hook);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    await Promise.allSettled(this.#draining.values());
  }

  async #sweepOnce(): Promise<void> {
    if (this.#closed) return;
    await this.refresh();
    this.drainAll();
  }

  /** One more held for the hook, until the next read says otherwise. */
  #counted(hook: string): void {
    this.#counts.set(hook, this.countFor(hook) + 1);
    this.#total++;
  }

  async #drainOnce(hook: string): Promise<void> {
    while (!this.#closed && !this.isPaused(hook)) {
      const oldest = await this.store.oldest(hook);
      if (oldest === undefined) break;
      let undo: (() => void) | undefined;
      const runs = runsOf(oldest);
      if (runs > 0 && this.budgets) {
        const verdict = await this.budgets.take(hook, runs);
        // Its budget holds it: the rest waits too, in order, until a window ends.
        if (!verdict.ok && verdict.over.budget.overflow === 'hold') break;
        // Past a budget that digests (or refuses): the taker digests it (it was acknowledged).
        if (verdict.ok) undo = () => verdict.undo();
      }
      // Another instance moved it first: its count is taken back, and the next oldest looked at.
      if (!(await this.store.release(hook, oldest, undo !== undefined))) undo?.();
    }
    await this.refresh();
  }
}

/** The runs of a held entry (its budget counts them); 0 when it cannot be read. */
function runsOf(payload: string): number {
  try {
    const runs = (JSON.parse(payload) as { action?: { runs?: unknown } }).action?.runs;
    return Array.isArray(runs) ? runs.length : 0;
  } catch {
    return 0;
  }
}
