// The one place an action is carried out, whoever produced it (the wake or agent endpoint, or a
// mapping): a wake enqueues its event, agent specs become jobs for the run service, a skip does
// nothing. The outcome is what the request is answered.
import type { GatewayHost } from '../host.ts';
import type { HooksSnapshot } from '../config/snapshot.ts';
import type { Action, Outcome } from './action.ts';
import { prepareAgentJob } from './agent.ts';
import type { RunService } from './run-service.ts';
import { runWake } from './wake.ts';

const SKIPPED: Outcome = Object.freeze({ status: 204 });

export class ActionExecutor {
  constructor(
    private readonly host: GatewayHost,
    private readonly runs: RunService,
  ) {}

  /** Throws the refusal of the first policy that refuses; nothing is done then. */
  async execute(action: Action, snap: HooksSnapshot): Promise<Outcome> {
    if (action.kind === 'skip') return SKIPPED;
    if (action.kind === 'wake') {
      await runWake(action.spec, this.host);
      return { status: 200, body: { ok: true, mode: action.spec.mode } };
    }
    // Every job is checked before any is submitted: a refusal leaves nothing half-done.
    const jobs = action.specs.map((spec) => prepareAgentJob(spec, snap, this.host));
    await this.runs.submit(jobs);
    const runId = jobs[0]!.runId;
    if (jobs.length === 1) return { status: 202, body: { ok: true, runId } };
    return { status: 202, body: { ok: true, runId, runIds: jobs.map((j) => j.runId) } };
  }
}
