// Pause and resume per hook (wake, agent or a mapping id). While a hook is paused its requests are
// checked as always, then their resolved actions are held (held-actions.ts) and answered 202 held;
// on resume they are carried out in arrival order: wakes as events, runs fed to the run service as
// its slots free up (never refused by maxQueuedRuns, never more than maxConcurrentRuns at once).
// A budget with overflow "hold" holds here too: its runs go on, in order, as its windows end.
// With hooks.queue the held actions live in Redis instead (queued-holds.ts), shared by every instance.
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { HookError, refuse } from '../errors.ts';
import type { GatewayHost, IdempotencyRecord } from '../host.ts';
import type { Action, AgentJob } from '../action.ts';
import { prepareAction, renderedMessage } from '../actions/execute.ts';
import type { BudgetBook } from '../budgets/budget-book.ts';
import type { RunService } from '../runs/run-service.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import { runWake } from '../actions/wake.ts';
import { errorMessage } from '../util/errors.ts';
import { HeldActions, type HeldAction } from './held-actions.ts';
import { Pauses } from './pauses.ts';
import { QueuedHolds } from './queued-holds.ts';
import type { HeldStore } from '../queue/held-store.ts';
import type { TakenAction } from '../actions/queued-actions.ts';

/** What the pause room reads of the hooks snapshot: the hooks' names, the held caps, how resumed runs route. */
export interface PauseSettings extends RoutingPolicy {
  readonly maxHeld: number;
  readonly maxHeldBytes: number;
  readonly maxConcurrentRuns: number;
  readonly mappings: readonly { readonly id: string }[];
}

/** What a client refused for a full hold is told to wait, in seconds. */
const FULL_RETRY_AFTER_SECONDS = 30;
/** Held actions carried out together: their events are written in one go, then released together. */
const BATCH = 64;
/** While every run slot is taken, how often a resume looks again (a run's end also wakes it). */
const SLOT_POLL_MS = 100;
/** After a failure to carry out a held action (the host could not take it), the resume tries again this late. */
const RETRY_DRAIN_MS = 5000;

/** How a drain ended: all carried out (or paused again), a failure, or a budget holding the rest. */
type DrainEnd = 'done' | 'failed' | 'budget';

export interface HookState {
  name: string;
  paused: boolean;
  held: number;
}

export class HookPauses {
  readonly #closing = new AbortController();
  /** The resume under way for each hook. */
  readonly #draining = new Map<string, Promise<void>>();
  /** Resumes waiting for a run slot (one per hook at most). */
  readonly #slotWaiters = new Set<() => void>();
  /** hooks.queue: new held actions go to Redis, shared by every instance. */
  #queued: QueuedHolds | undefined;

  private constructor(
    readonly pauses: Pauses,
    readonly held: HeldActions,
    private readonly host: GatewayHost,
    private readonly runs: RunService,
    private readonly snapshot: () => PauseSettings,
    private readonly budgets?: BudgetBook,
  ) {
    pauses.onChange((hook, paused) => {
      if (paused) return;
      void this.#drain(hook);
      this.#queued?.drain(hook);
    });
    runs.onFinal(() => this.#wakeSlotWaiters());
    // A budget's window ended: runs held for it may go on.
    budgets?.onFree(() => {
      this.start();
      this.#queued?.drainAll();
    });
  }

  /**
   * hooks.queue: from now on actions are held in Redis beside the queue, counted and released by
   * every instance alike (held.jsonl keeps only what an earlier process held, drained as before).
   */
  useQueue(store: HeldStore): void {
    this.#queued = new QueuedHolds(store, (hook) => this.pauses.isPaused(hook), this.host.logger, this.budgets);
    this.#queued.start();
  }

  /** Reads the shared held counts again (an admin answer shows what Redis holds now). */
  async refresh(): Promise<void> {
    await this.#queued?.refresh();
  }

  /** Held in all: here, and in Redis with the queue. */
  get heldCount(): number {
    return this.held.size + (this.#queued?.size ?? 0);
  }

  /** Opens <host.stateDir>/pauses.jsonl and held.jsonl (memory only without a state dir). */
  static async open(
    host: GatewayHost,
    runs: RunService,
    snapshot: () => PauseSettings,
    budgets?: BudgetBook,
  ): Promise<HookPauses> {
    const dir = host.stateDir;
    if (dir !== undefined) await mkdir(dir, { recursive: true, mode: 0o700 });
    const file = (name: string): string | undefined => (dir === undefined ? undefined : path.join(dir, name));
    const pausesFile = file('pauses.jsonl');
    // Both files are written at every start: a held file without its pauses file lost the latter.
    const fileLost = pausesFile !== undefined && !(await exists(pausesFile)) && (await exists(file('held.jsonl')!));
    const [pauses, held] = await Promise.all([
      Pauses.open(pausesFile, host.logger, host.fileSync),
      HeldActions.open(file('held.jsonl'), host.logger, host.fileSync),
    ]);
    const hookPauses = new HookPauses(pauses, held, host, runs, snapshot, budgets);
    if (pausesFile !== undefined) await hookPauses.#keepLostPauses(pausesFile, fileLost);
    return hookPauses;
  }

  /**
   * Held actions of a hook the pauses file says nothing of (neither its pause nor its resume): the
   * file lost its state (emptied, deleted, cut). The hook stays paused, on disk, until its owner
   * resumes it, and the loss is said in one line naming the file: never a silent resume.
   */
  async #keepLostPauses(file: string, fileLost: boolean): Promise<void> {
    const lost = this.held.hooks().filter((hook) => !this.pauses.knows(hook));
    // At 0: older than any change another instance shared (hooks.sharedState), which then prevails.
    for (const hook of lost) await this.pauses.set(hook, true, 0);
    if (!lost.length && !fileLost) return;
    this.host.logger.warn('pause state lost: hooks holding actions stay paused until resumed', {
      file,
      hooks: lost.length ? lost.join(', ') : 'none',
    });
  }

  /** Carries out what an earlier process held for hooks it had resumed (a resume a stop cut short). */
  start(): void {
    for (const hook of this.held.hooks()) if (!this.pauses.isPaused(hook)) void this.#drain(hook);
  }

  isPaused(hook: string): boolean {
    return this.pauses.isPaused(hook);
  }

  heldFor(hook: string): number {
    return this.held.countFor(hook) + (this.#queued?.countFor(hook) ?? 0);
  }

  /**
   * Holds a checked action of a paused hook; resolves once it is on disk. 503 paused_full beyond
   * hooks.maxHeld actions or hooks.maxHeldBytes bytes.
   */
  async hold(hook: string, requestId: string, action: Action, idempotency?: IdempotencyRecord): Promise<void> {
    const { maxHeld, maxHeldBytes } = this.snapshot();
    if (this.#queued) return this.#queued.hold(hook, requestId, action, maxHeld, maxHeldBytes);
    if (this.held.size >= maxHeld) throw refuse.pausedFull(maxHeld, FULL_RETRY_AFTER_SECONDS);
    // Held for its budget, not a pause: the pauses file says so before anything is held.
    if (!this.pauses.isPaused(hook)) await this.pauses.know(hook);
    if (!(await this.held.hold(hook, requestId, action, idempotency, maxHeldBytes))) {
      throw refuse.pausedFullBytes(maxHeldBytes, FULL_RETRY_AFTER_SECONDS);
    }
    // Resumed while this one was being written: it is carried out with the rest.
    if (!this.pauses.isPaused(hook)) void this.#drain(hook);
  }

  /** hooks.queue: a taken action of a paused hook goes back to the held actions in Redis, in its place. */
  async holdTaken(taken: TakenAction): Promise<void> {
    if (!this.#queued) throw new Error('no queue: a taken action cannot be held');
    await this.#queued.holdTaken(taken);
  }

  /** Every hook there is (wake, agent, the mappings) and any other that is paused or holds actions. */
  list(): HookState[] {
    const names = new Set(['wake', 'agent', ...this.snapshot().mappings.map((m) => m.id)]);
    for (const hook of this.pauses.hooks()) names.add(hook);
    for (const hook of this.held.hooks()) names.add(hook);
    for (const hook of this.#queued?.hooks() ?? []) names.add(hook);
    return [...names].map((name) => this.stateOf(name));
  }

  stateOf(name: string): HookState {
    return { name, paused: this.pauses.isPaused(name), held: this.heldFor(name) };
  }

  /** Whether `name` may be paused or resumed: a hook there is, or one still paused or holding. */
  knows(name: string): boolean {
    return this.list().some((h) => h.name === name);
  }

  /** Stops carrying out held actions (those left stay held), then closes the files. */
  async close(): Promise<void> {
    this.#closing.abort();
    this.#wakeSlotWaiters();
    await Promise.allSettled([...this.#draining.values(), this.#queued?.close()]);
    await Promise.all([this.pauses.close(), this.held.close()]);
  }

  /** Carries out the hook's held actions, oldest first, while it stays resumed. One drain per hook. */
  #drain(hook: string): Promise<void> {
    const under = this.#draining.get(hook);
    if (under) return under;
    const drain = this.#drainOnce(hook)
      .catch((err: unknown): DrainEnd => {
        this.host.logger.error('a resume failed', { hook, reason: errorMessage(err) });
        return 'failed';
      })
      .then((end) => {
        const failed = end === 'failed';
        this.#draining.delete(hook);
        // Waiting for a budget: the end of its window drains again.
        if (end === 'budget') return;
        if (this.#closing.signal.aborted || this.pauses.isPaused(hook) || this.held.countFor(hook) === 0) return;
        // Failed: again a little later; else held while this drain was ending: again now.
        if (!failed) void this.#drain(hook);
        else
          void delay(RETRY_DRAIN_MS, undefined, { ref: false, signal: this.#closing.signal })
            .then(() => this.#drain(hook))
            .catch(() => {});
      });
    this.#draining.set(hook, drain);
    return drain;
  }

  /** failed: something could not be carried out; budget: a budget holds the rest (both stay held). */
  async #drainOnce(hook: string): Promise<DrainEnd> {
    let failed = false;
    let budget = false;
    while (!this.pauses.isPaused(hook) && !this.#closing.signal.aborted && !failed && !budget) {
      const batch = this.held.oldest(hook, BATCH);
      if (batch.length === 0) break;
      const done: { id: string; requestId: string; written: Promise<unknown> }[] = [];
      for (const id of batch) {
        if (this.pauses.isPaused(hook) || this.#closing.signal.aborted) break;
        // Read back one at a time: only the actions being carried out are in memory.
        const held = await this.held.read(id);
        if (!held) {
          this.host.logger.warn('a held action could not be read back from disk; dropped', { hook, id });
          done.push({ id, requestId: '', written: Promise.resolve() });
          continue;
        }
        try {
          const carried = await this.#carryOut(held);
          if (carried === 'budget') {
            budget = true;
            break;
          }
          done.push({ id, requestId: held.requestId, ...carried });
        } catch (err) {
          if (!this.#closing.signal.aborted) this.#failed(hook, held.requestId, err);
          failed = true;
          break;
        }
      }
      const outcomes = await Promise.allSettled(done.map((d) => d.written));
      const released: string[] = [];
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'fulfilled') released.push(done[i]!.id);
        else {
          this.#failed(hook, done[i]!.requestId, outcome.reason);
          failed = true;
        }
      });
      await this.held.release(hook, released);
    }
    return failed ? 'failed' : budget ? 'budget' : 'done';
  }

  #failed(hook: string, requestId: string, err: unknown): void {
    this.host.logger.error('a held action could not be carried out; the resume tries again later', {
      hook,
      requestId,
      reason: errorMessage(err),
    });
  }

  /**
   * One held action under today's policies (a refusal now is logged and the action dropped). Its
   * events are started in order, without waiting (the promise returned settles once they are
   * written); its runs wait for free slots, after its events. Past a budget: 'budget' when it holds
   * (nothing done), or the runs kept for its digest when it digests.
   */
  async #carryOut(held: HeldAction): Promise<{ written: Promise<unknown> } | 'budget'> {
    let jobs: AgentJob[];
    try {
      jobs = prepareAction(held.action, this.snapshot(), this.host).jobs;
    } catch (err) {
      if (!(err instanceof HookError)) throw err;
      this.host.logger.warn('a held action was refused at resume by the policies now in force', {
        hook: held.hook,
        requestId: held.requestId,
        code: err.code,
      });
      return { written: Promise.resolve() };
    }
    let taken: { undo(): void } | undefined;
    if (jobs.length && this.budgets) {
      const verdict = await this.budgets.take(held.hook, jobs.length);
      if (!verdict.ok && verdict.over.budget.overflow !== 'digest') return 'budget';
      if (!verdict.ok) {
        await this.budgets.digest(verdict, held.hook, jobs[0]!.agentId, held.action.runs.map(renderedMessage));
        jobs = [];
      } else taken = verdict;
    }
    const written = Promise.all(held.action.wakes.map((wake) => runWake(wake, this.host, held.idempotency)));
    try {
      if (jobs.length) await written;
      for (const job of jobs) {
        job.hookId = held.hook;
        await this.#freeSlot();
        if (this.#closing.signal.aborted) throw new Error('closing');
        await this.runs.submit([job], held.idempotency);
        // Submitted: the budget's count stands whatever befalls the rest.
        taken = undefined;
      }
    } catch (err) {
      taken?.undo();
      throw err;
    }
    return { written };
  }

  /** Resolves once fewer runs are queued or running than maxConcurrentRuns. */
  async #freeSlot(): Promise<void> {
    while (!this.#closing.signal.aborted) {
      if (this.runs.running + this.runs.queued < this.snapshot().maxConcurrentRuns) return;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          this.#slotWaiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, SLOT_POLL_MS);
        this.#slotWaiters.add(wake);
      });
    }
  }

  #wakeSlotWaiters(): void {
    for (const wake of [...this.#slotWaiters]) wake();
  }
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}
