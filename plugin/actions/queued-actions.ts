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
import type { ReplayWork } from '../queue/replay-work.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import type { DedupeKeys } from '../dedupe/dedupe-keys.ts';
import type { CoalesceAs } from './run-batches.ts';
import type { ActionExecutor } from './execute.ts';

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

/** The queue as a door uses it (queue/action-queue.ts). */
export interface QueueAdd {
  add(payload: string): Promise<void>;
}

/** Told of the runs a door queued, once Redis has them (their state "queued", runs/shared-run-states.ts). */
export type QueuedRuns = (hook: string, requestId: string | undefined, jobs: readonly AgentJob[]) => void;

/** The door's side: an action becomes an entry; resolves once Redis has it (throws its 503s). */
export class ActionDoor {
  constructor(
    private readonly queue: QueueAdd,
    private readonly queued: QueuedRuns = () => {},
  ) {}

  /** `jobs`: the action's runs as the door prepared them (the ids its answer gives). */
  async add(entry: Omit<QueuedAction, 'id'>, jobs: readonly AgentJob[] = []): Promise<void> {
    const queued: QueuedAction = { id: randomUUID(), ...entry };
    await this.queue.add(JSON.stringify(queued));
    if (jobs.length) this.queued(entry.hook, entry.requestId || undefined, jobs);
  }

  /** A replay's run or delivery, queued under an entry id of its own. */
  async addReplay(hook: string, replay: ReplayWork): Promise<void> {
    const entry: QueuedReplay = { id: randomUUID(), hook, replay };
    await this.queue.add(JSON.stringify(entry));
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
    await this.queue.add(JSON.stringify(again));
  }
}

/** What an entry refused here (HookError) was: what the failure book keeps of it to replay. */
export interface RefusedAction {
  payload: string;
  hook: string;
  requestId?: string;
  runId?: string;
  agentId?: string;
  code: string;
  reason: string;
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
    private readonly outlets?: TakerOutlets,
  ) {}

  async act(payload: string): Promise<void> {
    let entry: QueuedAction | QueuedReplay;
    try {
      entry = JSON.parse(payload) as QueuedAction | QueuedReplay;
    } catch {
      // Not a door's: nothing to carry out (its content is not logged).
      this.logger.warn('a queue entry that is not an action was dropped', {});
      return;
    }
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
      claim.settle(outcome.record!);
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
}

/** A replay's record under its entry's id: the answer its replay was given. */
function replayRecord(entry: QueuedReplay): IdempotencyRecord {
  const runId = entry.replay.kind === 'run' ? entry.replay.job.runId : entry.replay.delivery.runId;
  return { scope: QUEUE_SCOPE, key: entry.id, at: Date.now(), status: 202, body: { ok: true, runId } };
}
