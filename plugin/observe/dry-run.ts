// `hookgate webhooks test`: a hook request resolved through the same functions as the live path
// (resolve.ts, the verifier, build-action, the policies, the dedupe key), and nothing carried out.
// No session, run, dedupe key, limiter entry or file comes of it: the host it is given only answers
// questions (agents, channels), and the transform runs in a worker of the caller's own runner.
import type { IncomingHttpHeaders } from 'node:http';
import { HookError, refuse } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import type { HooksSnapshot } from '../config/snapshot.ts';
import type { AgentJob, Outcome, WakeSpec } from '../actions/action.ts';
import { prepareAction } from '../actions/execute.ts';
import { buildMappedAction, type Transforms } from '../mappings/build-action.ts';
import type { TransformCall, TransformOutcome } from '../mappings/transform-runner.ts';
import { deliveryKeys } from '../dedupe/once-delivery.ts';
import { deliveryOf, parsePayload, targetOf } from '../http/resolve.ts';

export interface DryRunRequest {
  /** The hook name, as in POST <hooks.path>/<name>. */
  name: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The query string without '?', if any. */
  query?: string;
}

export interface DryRunResult {
  /** The mapping that owns the request, or the endpoint (wake, agent). */
  target?: string;
  /** How the request is admitted: the hook token (not checked here), or the sender's signature. */
  verification?: string;
  /** Each transform call's outcome (its output, or why it failed). */
  transforms: TransformOutcome[];
  wakes: WakeSpec[];
  jobs: AgentJob[];
  answer?: Outcome;
  dedupeKeys: { scope: string; key: string }[];
  /** What the live path would refuse the request with. */
  refusal?: HookError;
}

export async function dryRun(
  request: DryRunRequest,
  snap: HooksSnapshot,
  host: GatewayHost,
  transforms: Transforms,
): Promise<DryRunResult> {
  const result: DryRunResult = { transforms: [], wakes: [], jobs: [], dedupeKeys: [] };
  // What the transforms return is shown as well as used.
  const recording: Transforms = {
    async run(call: TransformCall) {
      const outcome = await transforms.run(call);
      result.transforms.push(outcome);
      return outcome;
    },
  };
  try {
    const { name, headers, body } = request;
    const target = targetOf(name, snap);
    if (target.kind === 'mapped' && target.candidates.length === 0) throw refuse.notFound();
    if (body.length > target.maxBodyBytes) throw refuse.payloadTooLarge(target.maxBodyBytes);
    const verifier = target.kind === 'mapped' ? target.verifier : undefined;
    let verified = false;
    if (!verifier) {
      result.verification = 'hook token (not checked by the dry run)';
    } else if (!verifier.proofHeaders.some((h) => headers[h] !== undefined)) {
      result.verification = `${verifier.scheme} signature: not checked (no ${verifier.proofHeaders.join(' or ')} header given)`;
    } else {
      const outcome = verifier.verify({ headers, body, nowMs: Date.now() });
      if (!outcome.ok) {
        result.verification = `${verifier.scheme} signature: ${outcome.expired ? 'expired' : 'invalid'}`;
        throw outcome.expired ? refuse.signatureExpired() : refuse.signatureInvalid();
      }
      result.verification = `${verifier.scheme} signature: valid`;
      verified = true;
    }
    const payload = parsePayload(target, body);
    if (verified && verifier?.fresh && !verifier.fresh(payload, Date.now())) {
      result.verification = `${verifier.scheme} signature: expired`;
      throw refuse.signatureExpired();
    }
    const delivery = deliveryOf(target, payload, { headers, name, query: request.query, bodyBytes: body.length }, snap);
    result.target = delivery.mapping ? delivery.mapping.where : `the ${delivery.kind} endpoint`;
    result.dedupeKeys = deliveryKeys(delivery);
    const action =
      delivery.endpoint ??
      (await buildMappedAction(delivery.mapping!, payload, delivery.mapped!, recording, host.logger));
    const { jobs, outcome } = prepareAction(action, snap, host);
    result.wakes = action.wakes;
    result.jobs = jobs;
    result.answer = outcome;
  } catch (err) {
    result.refusal = err instanceof HookError ? err : refuse.internal();
  }
  return result;
}
