// The one place an action is carried out, whoever produced it (the wake or agent endpoint, or a
// mapping): a wake enqueues its event, agent specs become jobs for the run service, a skip does
// nothing. The outcome is what the request is answered; with an idempotency key it is also the
// record the host keeps in the same write as the event or the runs' acceptance.
import type { GatewayHost, IdempotencyRecord } from '../host.ts';
import type { HooksSnapshot } from '../config/snapshot.ts';
import type { Action, Outcome } from './action.ts';
import { prepareAgentJob } from './agent.ts';
import type { RunService } from './run-service.ts';
import { runWake } from './wake.ts';

export interface ExecutedOutcome extends Outcome {
  /** The key's record, when the request carried one. */
  record?: IdempotencyRecord;
}

export class ActionExecutor {
  constructor(
    private readonly host: GatewayHost,
    private readonly runs: RunService,
  ) {}

  /** Throws the refusal of the first policy that refuses; nothing is done then. */
  async execute(action: Action, snap: HooksSnapshot, key?: { scope: string; key: string }): Promise<ExecutedOutcome> {
    const recordOf = (outcome: Outcome): IdempotencyRecord | undefined =>
      key && { scope: key.scope, key: key.key, at: Date.now(), status: outcome.status, ...(outcome.body ? { body: outcome.body } : {}) };
    if (action.kind === 'skip') {
      const outcome: Outcome = { status: 204 };
      return { ...outcome, record: recordOf(outcome) };
    }
    if (action.kind === 'wake') {
      const outcome: Outcome = { status: 200, body: { ok: true, mode: action.spec.mode } };
      const record = recordOf(outcome);
      await runWake(action.spec, this.host, record);
      return { ...outcome, record };
    }
    // Every job is checked before any is submitted: a refusal leaves nothing half-done.
    const jobs = action.specs.map((spec) => prepareAgentJob(spec, snap, this.host));
    const runId = jobs[0]!.runId;
    const outcome: Outcome = {
      status: 202,
      body: jobs.length === 1 ? { ok: true, runId } : { ok: true, runId, runIds: jobs.map((j) => j.runId) },
    };
    const record = recordOf(outcome);
    await this.runs.submit(jobs, record);
    return { ...outcome, record };
  }
}
