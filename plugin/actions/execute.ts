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

export interface ExecutedOutcome extends Outcome {
  /** The key's record, when the request carried one. */
  record?: IdempotencyRecord;
  /** The hook is paused: the action was held, not carried out. */
  held?: boolean;
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
}

export class ActionExecutor {
  constructor(
    private readonly host: GatewayHost,
    private readonly runs: RunService,
    private readonly waiters: RunWaiters,
    private readonly gate?: HoldGate,
  ) {}

  /**
   * Throws the refusal of the first policy that refuses; nothing is done then. With `wait`, the runs
   * are followed from before they are submitted, so not even the fastest run ends unseen.
   */
  async execute(
    action: Action,
    snap: RoutingPolicy,
    key?: { scope: string; key: string; bodyHash?: string },
    origin?: ActionOrigin,
    wait = false,
  ): Promise<ExecutedOutcome> {
    // Every job is checked before anything is done: a refusal leaves nothing half-done.
    const prepared = prepareAction(action, snap, this.host);
    const { jobs } = prepared;
    if (origin !== undefined) {
      for (const job of jobs) {
        job.requestId = origin.requestId;
        job.hookId = origin.hook;
      }
    }
    const held = origin !== undefined && this.gate?.isPaused(origin.hook) === true;
    const outcome: Outcome = held ? heldAnswer(origin.requestId) : prepared.outcome;
    const record: IdempotencyRecord | undefined = key && {
      scope: key.scope,
      key: key.key,
      at: Date.now(),
      status: outcome.status,
      ...(outcome.body ? { body: outcome.body } : {}),
      ...(key.bodyHash ? { bodyHash: key.bodyHash } : {}),
    };
    if (held) {
      await this.gate!.hold(origin.hook, origin.requestId, action, record);
      return { ...outcome, record, held };
    }
    for (const wake of action.wakes) await runWake(wake, this.host, record);
    if (!jobs.length) return { ...outcome, record };
    const followed = wait ? this.waiters.follow(jobs) : undefined;
    try {
      await this.runs.submit(jobs, record);
    } catch (err) {
      if (followed) this.waiters.forget(followed);
      throw err;
    }
    return { ...outcome, record, ...(followed ? { followed } : {}) };
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
  if (action.fanOut) return { status: 200, body: { ok: true, mode: first.mode, count: action.wakes.length } };
  // Shared: every wake of a mode is answered the same, and a kept answer costs no copy.
  return { status: 200, body: WAKE_ANSWERS[first.mode] };
}
