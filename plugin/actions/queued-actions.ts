// Actions through the queue on Redis (hooks.queue): what a door adds, once every policy passed and
// the run ids are chosen, and how an assistant carries out what it takes. The assistant's durable
// dedupe is the action's id kept by the host with the action's effects (the events, the runs'
// acceptance) in one write, under the scope "queue": an action taken again after a restart is found
// there and only confirmed. A replay asked at any instance is an entry too; an action the taker's
// own policies refuse is handed over to be kept as a failure, never dropped.
// docs/guide/door-anywhere.md says what is left.
import { randomUUID } from 'node:crypto';
import type { Action, AgentJob } from '../action.ts';
import type { IdempotencyRecord, Logger } from '../host.ts';
import { HookError } from '../errors.ts';
import type { RefusedAction, ReplayWork } from '../queue/replay-work.ts';
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

/** A replay asked at any instance (failures/queued-replay.ts), carried out by whichever taker is free. */
export interface QueuedReplay {
  id: string;
  hook: string;
  replay: ReplayWork;
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

/** Told of the runs a door queued, once Redis has them (their state "queued", runs/shared-run-states.ts). */
export type QueuedRuns = (hook: string, requestId: string | undefined, jobs: readonly AgentJob[]) => void;

/**
 * The door's side: an action becomes an entry; resolves once Redis has it (throws its 503s), with
 * whether it was queued or held (its hook paused, or holding older entries).
 */
export class ActionDoor {
  constructor(
    private readonly queue: QueueAdd,
    private readonly caps: () => HeldCaps,
    private readonly queued: QueuedRuns = () => {},
  ) {}

  /** `jobs`: the action's runs as the door prepared them (the ids its answer gives). */
  async add(
    entry: Omit<QueuedAction, 'id'>,
    paused: boolean,
    jobs: readonly AgentJob[] = [],
  ): Promise<'queued' | 'held'> {
    const queued: QueuedAction = { id: randomUUID(), ...entry };
    const added = await this.#add(JSON.stringify(queued), entry.hook, paused);
    if (jobs.length) this.queued(entry.hook, entry.requestId || undefined, jobs);
    return added;
  }

  /** Behind what the hook holds already, as any action of it (a replay of a paused hook waits too). */
  #add(payload: string, hook: string, paused: boolean): Promise<'queued' | 'held'> {
    const { maxHeld, maxHeldBytes } = this.caps();
    return this.queue.add(payload, hook, { paused, maxHeld, maxHeldBytes });
  }

  /** A replay's run or delivery, queued under an entry id of its own. */
  async addReplay(hook: string, replay: ReplayWork): Promise<void> {
    const entry: QueuedReplay = { id: randomUUID(), hook, replay };
    await this.#add(JSON.stringify(entry), hook, false);
    if (replay.kind === 'run') this.queued(hook, replay.job.requestId, [replay.job]);
  }

  /**
   * An entry an assistant refused, queued again as it was under a new id (a replay once the policy
   * is fixed): its first run under `runId` (the id the replay answers), any others under new ids.
   */
  async requeue(payload: string, runId: string): Promise<void> {
    const entry = JSON.parse(payload) as QueuedAction;
    const runs = entry.action.runs.map((spec, i) => ({ ...spec, runId: i === 0 ? runId : randomUUID() }));
    const again: QueuedAction = { ...entry, id: randomUUID(), action: { ...entry.action, runs } };
    await this.#add(JSON.stringify(again), entry.hook, false);
  }
}

/** What the taker hands over that the executor does not carry out: replays, and refusals to keep. */
export interface TakerOutlets {
  /** Carries out a replay's work, its record kept with the run's acceptance (or after the delivery's). */
  replay(work: ReplayWork, record: IdempotencyRecord): Promise<void>;
  /** An entry the door acknowledged and this assistant's policies refuse: kept as a failure. */
  refused(action: RefusedAction): Promise<void>;
}

/** The assistant's side: one taken entry carried out at most once here. */
export class QueuedActionTaker {
  constructor(
    private readonly executor: Pick<ActionExecutor, 'actOnTaken'>,
    private readonly dedupe: DedupeKeys,
    private readonly policy: () => RoutingPolicy,
    private readonly logger: Logger,
    private readonly runs: Pick<RunService, 'retryTaken' | 'whenRoomFor'>,
    private readonly outlets?: TakerOutlets,
  ) {}

  async act(taken: TakenEntry): Promise<void> {
    const payload = taken.payload!;
    let parsed: QueuedAction | QueuedReplay | QueuedRetry;
    try {
      parsed = JSON.parse(payload) as QueuedAction | QueuedReplay | QueuedRetry;
    } catch {
      // Not a door's: nothing to carry out (its content is not logged).
      this.logger.warn('a queue entry that is not an action was dropped', {});
      return;
    }
    if ('kind' in parsed && parsed.kind === 'retry') return this.#retry(parsed);
    const entry: TakenAction | QueuedReplay =
      'replay' in parsed
        ? parsed
        : {
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
      if ('replay' in entry) {
        if (!this.outlets) throw new Error('no replays are carried out here');
        const record = replayRecord(entry);
        await this.outlets.replay(entry.replay, record);
        claim.settle(record);
        return;
      }
      const outcome = await this.executor.actOnTaken(entry, this.policy());
      // Held (back in Redis): not carried out, so its id stays free for when it is taken again.
      if (outcome.held) claim.pass(outcome.record!);
      else claim.settle(outcome.record!);
    } catch (err) {
      claim.release(err);
      // Acknowledged at the door, refused here: a failure to replay once the policy allows it. A
      // 5xx (shutting down, overloaded) is not a refusal: the queue keeps the entry for a taker.
      if (err instanceof HookError && err.status < 500 && this.outlets && !('replay' in entry)) {
        const run = entry.action.runs[0];
        await this.outlets.refused({
          payload,
          hook: entry.hook,
          ...(entry.requestId ? { requestId: entry.requestId } : {}),
          ...(run?.runId !== undefined ? { runId: run.runId } : {}),
          ...(run?.agentId !== undefined ? { agentId: run.agentId } : {}),
          code: err.code,
          reason: err.message,
        });
        return;
      }
      throw err;
    }
  }

  /** A run's next try: queued here under its run id; confirmed once accepted (it runs after). */
  async #retry(retry: QueuedRetry): Promise<void> {
    // Taken here already (its confirmation was lost): not tried twice.
    if (this.dedupe.seen(QUEUE_SCOPE, retry.id)) return;
    const claim = this.dedupe.claim(QUEUE_SCOPE, retry.id);
    try {
      // As a queued run: taken once it can start here.
      await this.runs.whenRoomFor(1);
      await this.runs.retryTaken(retry.run, retry.attempts);
      claim.settle({ at: Date.now(), status: 202 });
    } catch (err) {
      claim.release(err);
      throw err;
    }
  }
}

/** A replay's record under its entry's id: the answer its replay was given. */
function replayRecord(entry: QueuedReplay): IdempotencyRecord {
  const runId = entry.replay.kind === 'run' ? entry.replay.job.runId : entry.replay.delivery.runId;
  return { scope: QUEUE_SCOPE, key: entry.id, at: Date.now(), status: 202, body: { ok: true, runId } };
}
