// The one place an action is carried out, whoever produced it (the wake or agent endpoint, or a
// mapping): wakes enqueue their events, agent specs become jobs for the run service, nothing means
// a skip. The outcome is what the request is answered; with an idempotency key it is also the
// record the host keeps in the same write as the events or the runs' acceptance.
import type { GatewayHost, IdempotencyRecord } from '../host.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import type { Action, AgentJob, Outcome } from '../action.ts';
import { prepareAgentJob } from './agent.ts';
import type { RunService } from '../runs/run-service.ts';
import { runWake } from './wake.ts';
import type { FollowedRuns, RunWaiters } from '../runs/waiters.ts';
import { refuse } from '../errors.ts';
import type { BudgetBook, BudgetVerdict } from '../budgets/budget-book.ts';
import { unwrapExternalContent } from '../safety/index.ts';
import type { CoalesceAs, RunBatches } from './run-batches.ts';
import { QUEUE_SCOPE, type ActionDoor, type TakenAction } from './queued-actions.ts';

/** A request's idempotency key: its scope, the key, and its body's hash. */
type RequestKey = { scope: string; key: string; bodyHash?: string };

export interface ExecutedOutcome extends Outcome {
  /** The key's record, when the request carried one. */
  record?: IdempotencyRecord;
  /** The hook is paused (or its budget holds): the action was held, not carried out. */
  held?: boolean;
  /** Past its budget: the runs' texts were kept for the window's digest, nothing run. */
  digested?: boolean;
  /** The run joined a batch (coalesce): it starts when the batch closes. */
  coalesced?: boolean;
  /** The runs, followed until they end, when the request waits for them (and the followed runs are not at their limit). */
  followed?: FollowedRuns;
}

/** Where a request's action came from: its hook (wake, agent or the mapping's id) and request id. */
export interface ActionOrigin {
  hook: string;
  requestId: string;
}

/** The pause gate (pauses/hook-pauses.ts): a paused hook's checked actions are held for its resume. */
export interface HoldGate {
  isPaused(hook: string): boolean;
  hold(hook: string, requestId: string, action: Action, idempotency?: IdempotencyRecord): Promise<void>;
  /** Actions held for the hook now (paused, or waiting for its budget). */
  heldFor(hook: string): number;
  /** hooks.queue: a taken action handed back to the shared held entries, in its place. */
  holdTaken?(taken: TakenAction): Promise<void>;
}

/** The budgets (budgets/): whether a request's runs fit, and the digest of those that do not. */
export type BudgetGate = Pick<BudgetBook, 'holdsInOrder' | 'take' | 'digest'>;

export class ActionExecutor {
  constructor(
    private readonly host: GatewayHost,
    private readonly runs: RunService,
    private readonly waiters: RunWaiters,
    private readonly gate?: HoldGate,
    private readonly budgets?: BudgetGate,
    private readonly batches?: Pick<RunBatches, 'add'>,
    /** hooks.queue: what requests here accept goes to the queue, and is carried out where taken. */
    private readonly door?: Pick<ActionDoor, 'add'>,
  ) {}

  /**
   * Throws the refusal of the first policy that refuses; nothing is done then. With `wait`, the runs
   * are followed from before they are submitted, so not even the fastest run ends unseen.
   */
  async execute(
    action: Action,
    snap: RoutingPolicy,
    key?: RequestKey,
    origin?: ActionOrigin,
    wait = false,
    /** The mapping's coalesce, its key rendered: the run joins a batch (run-batches.ts). */
    coalesce?: CoalesceAs,
  ): Promise<ExecutedOutcome> {
    if (this.door) return this.#enqueue(action, snap, key, origin, coalesce);
    return this.#act(action, snap, key, origin, wait, coalesce);
  }

  /**
   * An action a door queued, taken here: carried out as its request would have been without the
   * queue (pause, budget, batch), its record under the action's id (queued-actions.ts).
   */
  async actOnTaken(entry: TakenAction, snap: RoutingPolicy): Promise<ExecutedOutcome> {
    const origin = { hook: entry.hook, requestId: entry.requestId };
    // Taken only once its runs can start here; until then they wait in the queue, for any taker.
    if (entry.action.runs.length && !entry.coalesce) await this.runs.whenRoomFor(entry.action.runs.length);
    return this.#act(entry.action, snap, { scope: QUEUE_SCOPE, key: entry.id }, origin, false, entry.coalesce, entry);
  }

  /**
   * The door's difference: every policy applied and the runs' ids chosen here, then the action is
   * added to the queue; the answer is today's once Redis has it. A request that asked to wait is
   * answered at once (its runs end elsewhere); a batched run's answer carries its own run id. A
   * paused hook's action (or one behind others its hook holds) is held in Redis and answered held.
   */
  async #enqueue(
    action: Action,
    snap: RoutingPolicy,
    key: RequestKey | undefined,
    origin: ActionOrigin | undefined,
    coalesce: CoalesceAs | undefined,
  ): Promise<ExecutedOutcome> {
    const { jobs, outcome } = prepareAction(action, snap, this.host);
    const runs = action.runs.map((spec, i) => ({
      ...spec,
      runId: jobs[i]!.runId,
    }));
    const hook = origin?.hook ?? 'unknown';
    const requestId = origin?.requestId ?? '';
    const queued = await this.door!.add(
      { hook, requestId, action: { ...action, runs, waitForCompletion: undefined }, ...(coalesce ? { coalesce } : {}) },
      this.gate?.isPaused(hook) === true,
      jobs,
    );
    if (queued === 'held') {
      const answer = heldAnswer(requestId);
      return executed(answer, keyRecord(key, answer), { held: true });
    }
    return executed(outcome, keyRecord(key, outcome));
  }

  async #act(
    action: Action,
    snap: RoutingPolicy,
    key: RequestKey | undefined,
    origin: ActionOrigin | undefined,
    wait: boolean,
    coalesce: CoalesceAs | undefined,
    /**
     * Taken from the queue (answered already): past a budget that refuses, it is digested, never
     * lost; held, it goes back to the shared held entries.
     */
    fromQueue?: TakenAction,
  ): Promise<ExecutedOutcome> {
    const acknowledged = fromQueue !== undefined;
    if (coalesce && this.batches && origin && action.runs.length === 1 && !action.wakes.length) {
      // A paused hook holds it as a run of its own.
      if (!this.gate?.isPaused(origin.hook)) return this.#join(action, snap, key, origin, coalesce);
    }
    // Every job is checked before anything is done: a refusal leaves nothing half-done.
    const prepared = prepareAction(action, snap, this.host);
    const { jobs } = prepared;
    if (origin !== undefined) {
      for (const job of jobs) {
        job.requestId = origin.requestId;
        job.hookId = origin.hook;
      }
    }
    let held = origin !== undefined && this.gate?.isPaused(origin.hook) === true;
    let taken: Extract<BudgetVerdict, { ok: true }> | undefined;
    let past: Extract<BudgetVerdict, { ok: false }> | undefined;
    // Released from hold with its budget counted (queued-actions.ts): not counted twice.
    if (!held && origin !== undefined && jobs.length && this.budgets && fromQueue?.budgeted !== true) {
      const { hook } = origin;
      // Runs held for a budget go first, in order: a request behind them waits too.
      if (this.gate && this.gate.heldFor(hook) > 0 && this.budgets.holdsInOrder(hook)) held = true;
      else {
        const verdict = await this.budgets.take(hook, jobs.length);
        if (verdict.ok) taken = verdict;
        else if (verdict.over.budget.overflow === 'refuse' && !acknowledged)
          throw refuse.budgetExhausted(Math.max(1, Math.ceil((verdict.endsAt - Date.now()) / 1000)));
        else if (verdict.over.budget.overflow === 'hold' && this.gate) held = true;
        else past = verdict;
      }
    }
    const outcome: Outcome = held
      ? heldAnswer(origin!.requestId)
      : past
        ? digestedAnswer(origin!.requestId)
        : prepared.outcome;
    const record = keyRecord(key, outcome);
    if (held) {
      if (fromQueue && this.gate!.holdTaken) await this.gate!.holdTaken(fromQueue);
      else await this.gate!.hold(origin!.hook, origin!.requestId, action, record);
      return executed(outcome, record, { held });
    }
    if (past) {
      await this.budgets!.digest(past, origin!.hook, jobs[0]!.agentId, action.runs.map(renderedMessage));
      for (const wake of action.wakes) await runWake(wake, this.host, record);
      return executed(outcome, record, { digested: true });
    }
    try {
      return await this.#carryOut(action, jobs, outcome, record, wait);
    } catch (err) {
      taken?.undo();
      throw err;
    }
  }

  /** The run joins its batch; the request is answered with the batch's run id. */
  async #join(
    action: Action,
    snap: RoutingPolicy,
    key: RequestKey | undefined,
    origin: ActionOrigin,
    coalesce: CoalesceAs,
  ): Promise<ExecutedOutcome> {
    const runId = await this.batches!.add(origin.hook, coalesce, action.runs[0]!, origin.requestId, snap);
    const outcome: Outcome = {
      status: 202,
      body: { ok: true, runId, coalesced: true },
    };
    const record = keyRecord(key, outcome);
    return executed(outcome, record, { coalesced: true });
  }

  async #carryOut(
    action: Action,
    jobs: AgentJob[],
    outcome: Outcome,
    record: IdempotencyRecord | undefined,
    wait: boolean,
  ): Promise<ExecutedOutcome> {
    for (const wake of action.wakes) await runWake(wake, this.host, record);
    if (!jobs.length) return executed(outcome, record);
    const followed = wait ? this.waiters.follow(jobs) : undefined;
    try {
      await this.runs.submit(jobs, record);
    } catch (err) {
      if (followed) this.waiters.forget(followed);
      throw err;
    }
    return executed(outcome, record, { followed });
  }
}

/**
 * The action with every policy applied: its agent jobs and the answer it would get. Throws the
 * first refusal; does nothing (the dry run shows what it returns).
 */
export function prepareAction(
  action: Action,
  snap: RoutingPolicy,
  host: GatewayHost,
): { jobs: AgentJob[]; outcome: Outcome } {
  const jobs = action.runs.map((spec) => prepareAgentJob(spec, snap, host));
  return {
    jobs,
    outcome: answerFor(
      action,
      jobs.map((j) => j.runId),
    ),
  };
}

/** A run's message as it was rendered, unwrapped when a preset had wrapped it already (a digest wraps it again). */
export function renderedMessage(spec: Action['runs'][number]): string {
  if (!spec.alreadyWrapped) return spec.message;
  return unwrapExternalContent(spec.message)?.content ?? spec.message;
}

/**
 * The executor's answer, one shape built field by field: V8 copied a spread of the outcome here
 * through its slow path on every request.
 */
function executed(
  outcome: Outcome,
  record: IdempotencyRecord | undefined,
  marks: Pick<ExecutedOutcome, 'held' | 'digested' | 'coalesced' | 'followed'> = {},
): ExecutedOutcome {
  return {
    status: outcome.status,
    body: outcome.body,
    record,
    held: marks.held,
    digested: marks.digested,
    coalesced: marks.coalesced,
    followed: marks.followed,
  };
}

/** The record of a request's key: the answer it got, kept with what the request did. */
function keyRecord(key: RequestKey | undefined, outcome: Outcome): IdempotencyRecord | undefined {
  return (
    key && {
      scope: key.scope,
      key: key.key,
      at: Date.now(),
      status: outcome.status,
      ...(outcome.body ? { body: outcome.body } : {}),
      ...(key.bodyHash ? { bodyHash: key.bodyHash } : {}),
    }
  );
}

/** A request past its budget with overflow "digest": accepted, its runs kept for the window's digest. */
function digestedAnswer(requestId: string): Outcome {
  return { status: 202, body: { ok: true, digested: true, requestId } };
}

/** A paused hook's answer (its request id is the one the request log shows). */
function heldAnswer(requestId: string): Outcome {
  return { status: 202, body: { ok: true, held: true, requestId } };
}

const WAKE_ANSWERS = Object.freeze({
  now: Object.freeze({ ok: true, mode: 'now' }),
  'next-heartbeat': Object.freeze({ ok: true, mode: 'next-heartbeat' }),
});

/** 202 with the run ids when there are runs; else 200 with the mode (and the count of a fan-out); else 204. */
function answerFor(action: Action, runIds: readonly string[]): Outcome {
  if (runIds.length) {
    return {
      status: 202,
      body:
        runIds.length === 1 && !action.fanOut
          ? { ok: true, runId: runIds[0] }
          : { ok: true, runId: runIds[0], runIds: [...runIds] },
    };
  }
  const first = action.wakes[0];
  if (!first) return { status: 204 };
  if (action.fanOut)
    return {
      status: 200,
      body: { ok: true, mode: first.mode, count: action.wakes.length },
    };
  // Shared: every wake of a mode is answered the same, and a kept answer costs no copy.
  return { status: 200, body: WAKE_ANSWERS[first.mode] };
}
