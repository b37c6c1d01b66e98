// Actions through the queue on Redis (hooks.queue): what a door adds, once every policy passed and
// the run ids are chosen, and how an assistant carries out what it takes. The assistant's durable
// dedupe is the action's id kept by the host with the action's effects (the events, the runs'
// acceptance) in one write, under the scope "queue": an action taken again after a restart is found
// there and only confirmed. docs/guide/door-anywhere.md says what is left.
import { randomUUID } from 'node:crypto';
import type { Action } from '../action.ts';
import type { Logger } from '../host.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import type { DedupeKeys } from '../dedupe/dedupe-keys.ts';
import type { CoalesceAs } from './run-batches.ts';
import type { ActionExecutor } from './execute.ts';
import type { HoldAsked, TakenEntry } from '../queue/action-queue.ts';
import type { RetryStore } from '../queue/retry-store.ts';
import type { RunRetry, SharedRetrySchedule } from '../runs/run-retries.ts';
import type { RunService } from '../runs/run-service.ts';
import type { AcceptedRun, RunAttempt } from '../host.ts';

/** The dedupe scope of queued actions' ids: apart from every hook's, so none collides. */
export const QUEUE_SCOPE = 'queue';

/** What a door adds to the queue: the rendered action, its runs' ids already chosen. */
export interface QueuedAction {
  id: string;
  hook: string;
  requestId: string;
  action: Action;
  coalesce?: CoalesceAs;
}

/**
 * A run's next try, due in Redis (queue/retry-store.ts) and moved onto the queue then: its id names
 * the run and the try, so the try is carried out once whoever takes it.
 */
export interface QueuedRetry {
  kind: 'retry';
  id: string;
  run: AcceptedRun;
  attempts: RunAttempt[];
}

/** hooks.queue: runs wait for their next try in Redis (run-retries.ts hands them over here). */
export function sharedRetries(store: Pick<RetryStore, 'schedule'>): SharedRetrySchedule {
  return (retry: RunRetry) => {
    const entry: QueuedRetry = {
      kind: 'retry',
      id: `retry:${retry.run.runId}:${retry.attempts.length + 1}`,
      run: retry.run,
      attempts: retry.attempts,
    };
    return store.schedule(JSON.stringify(entry), retry.dueAt);
  };
}

/** An entry as a taker took it: the action, and where it sits in Redis (to hand it back held). */
export interface TakenAction extends QueuedAction {
  /** Its entry on the stream. */
  streamId: string;
  /** The entry as the door wrote it: held again, it is the same member (held-store.ts). */
  payload: string;
  /** Its arrival number: held again, it goes back to its place. */
  seq?: number;
  /** Released from hold with its runs counted against their budgets already: not counted again. */
  budgeted?: boolean;
}

/** The queue as a door uses it (queue/action-queue.ts). */
export interface QueueAdd {
  add(payload: string, hook: string, hold: HoldAsked): Promise<'queued' | 'held'>;
}

/** The held caps (hooks.maxHeld, hooks.maxHeldBytes), which bound what is held across instances. */
export type HeldCaps = Pick<HoldAsked, 'maxHeld' | 'maxHeldBytes'>;

/**
 * The door's side: an action becomes an entry; resolves once Redis has it (throws its 503s), with
 * whether it was queued or held (its hook paused, or holding older entries).
 */
export class ActionDoor {
  constructor(
    private readonly queue: QueueAdd,
    private readonly caps: () => HeldCaps,
  ) {}

  async add(entry: Omit<QueuedAction, 'id'>, paused: boolean): Promise<'queued' | 'held'> {
    const queued: QueuedAction = { id: randomUUID(), ...entry };
    const { maxHeld, maxHeldBytes } = this.caps();
    return this.queue.add(JSON.stringify(queued), entry.hook, { paused, maxHeld, maxHeldBytes });
  }
}

/** The assistant's side: one taken entry carried out at most once here. */
export class QueuedActionTaker {
  constructor(
    private readonly executor: Pick<ActionExecutor, 'actOnTaken'>,
    private readonly dedupe: DedupeKeys,
    private readonly policy: () => RoutingPolicy,
    private readonly logger: Logger,
    private readonly runs: Pick<RunService, 'retryTaken'>,
  ) {}

  async act(taken: TakenEntry): Promise<void> {
    const payload = taken.payload!;
    let parsed: QueuedAction | QueuedRetry;
    try {
      parsed = JSON.parse(payload) as QueuedAction | QueuedRetry;
    } catch {
      // Not a door's: nothing to carry out (its content is not logged).
      this.logger.warn('a queue entry that is not an action was dropped', {});
      return;
    }
    if ('kind' in parsed && parsed.kind === 'retry') return this.#retry(parsed);
    const entry: TakenAction = {
      ...(parsed as QueuedAction),
      streamId: taken.streamId,
      payload,
      ...(taken.seq !== undefined ? { seq: taken.seq } : {}),
      ...(taken.budgeted ? { budgeted: true } : {}),
    };
    // Carried out here already (before a restart, or while its confirmation was lost): confirmed only.
    if (this.dedupe.seen(QUEUE_SCOPE, entry.id)) return;
    const claim = this.dedupe.claim(QUEUE_SCOPE, entry.id);
    try {
      const outcome = await this.executor.actOnTaken(entry, this.policy());
      // Held (back in Redis): not carried out, so its id stays free for when it is taken again.
      if (outcome.held) claim.pass(outcome.record!);
      else claim.settle(outcome.record!);
    } catch (err) {
      claim.release(err);
      throw err;
    }
  }

  /** A run's next try: queued here under its run id; confirmed once accepted (it runs after). */
  async #retry(retry: QueuedRetry): Promise<void> {
    // Taken here already (its confirmation was lost): not tried twice.
    if (this.dedupe.seen(QUEUE_SCOPE, retry.id)) return;
    const claim = this.dedupe.claim(QUEUE_SCOPE, retry.id);
    try {
      await this.runs.retryTaken(retry.run, retry.attempts);
      claim.settle({ at: Date.now(), status: 202 });
    } catch (err) {
      claim.release(err);
      throw err;
    }
  }
}
