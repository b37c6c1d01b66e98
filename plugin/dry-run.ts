// `hookgate webhooks test`: a hook request planned by the live path's planner (plan.ts), its action
// built and its policies applied as the live path would, and nothing carried out.
// No session, run, dedupe key, limiter entry or file comes of it: the host it is given only answers
// questions (agents, channels), and the transform runs in a worker of the caller's own runner.
import type { IncomingHttpHeaders } from 'node:http';
import { ConfigError, HookError, refuse } from './errors.ts';
import { loadConfig } from './config/load-snapshot.ts';
import type { GatewayHost } from './host.ts';
import type { HooksSnapshot } from './request/snapshot.ts';
import type { AgentJob, Outcome, WakeSpec } from './action.ts';
import { prepareAction } from './actions/execute.ts';
import { buildMappedAction, type Transforms } from './mappings/build-action.ts';
import type { TransformCall, TransformOutcome } from './transforms/index.ts';
import type { DedupeKey } from './request/idempotency.ts';
import type { Reply } from './mappings/respond.ts';
import { parsePayload, targetOf, type Target } from './request/resolve.ts';
import type { CompiledMapping } from './mappings/mapping.ts';
import { failingCondition } from './mappings/filters.ts';
import { isIP } from 'node:net';
import { budgetsOf, limitText, overBudget, type WindowUse } from './budgets/budget.ts';
import {
  planRequest,
  replyOf,
  answeredStatus,
  type ActingPlan,
  type Plan,
  type ProofChecks,
  type RequestFacts,
} from './request/plan.ts';

export interface DryRunRequest {
  /** The hook name, as in POST <hooks.path>/<name>. */
  name: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The query string without '?', if any. */
  query?: string;
  /** The hooks paused now (wake, agent, mapping ids): their actions would be held. */
  paused?: ReadonlySet<string>;
  /** The client address to try the source allowlists with; unchecked without it. */
  source?: string;
  /** The budgets' windows as the gateway keeps them (by budget key): a budget spent shows. */
  budgetWindows?: ReadonlyMap<string, WindowUse>;
}

export interface DryRunResult {
  /** The mapping that owns the request, or the endpoint (wake, agent). */
  target?: string;
  /** The hook it resolves to (wake, agent or the mapping's id), and whether that hook is paused. */
  hook?: { name: string; paused: boolean };
  /** How the request is admitted: the hook token (not checked here), or the sender's signature. */
  verification?: string;
  /** What is checked at the door: the source allowlists and the hook's rate limit, as sentences. */
  reins: string[];
  /** Ignored: each mapping that could have taken the request, and the condition it failed. */
  ignored?: { mapping: string; failed: string }[];
  /** Each transform call's outcome (its output, or why it failed). */
  transforms: TransformOutcome[];
  wakes: WakeSpec[];
  jobs: AgentJob[];
  answer?: Outcome;
  dedupeKeys: DedupeKey[];
  /** What its runs would meet: coalesced into a batch, or past a budget (digested, held), as a sentence. */
  spend?: string;
  /** The plan the live path would carry out, once the request got that far. */
  plan?: Plan;
  /** What the live path would refuse the request with. */
  refusal?: HookError;
  /** Why the mapping for this name cannot be tried here (a variable it reads is unset), key by key. */
  unavailable?: string[];
}

/** A mapping left out of the dry run's config: a variable it reads is not set in this shell. */
export interface UnavailableMapping {
  /** Its match.path, or undefined when it answers any name. */
  name: string | undefined;
  problems: string[];
}

const UNSET_IN_MAPPING = /^\S+\.mappings\[(\d+)\](?: \(id "[^"]*"\))?[^:]*: environment variable \w+ is not set$/;

/**
 * The config as the dry run uses it: whole when it loads; otherwise, when its only problems are unset
 * variables inside mappings, without those mappings, which are listed (only their own dry runs fail).
 */
export async function loadForDryRun(
  host: GatewayHost,
): Promise<{ snapshot: HooksSnapshot; unavailable: UnavailableMapping[] }> {
  try {
    return { snapshot: (await loadConfig(host)).snapshot, unavailable: [] };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const byIndex = new Map<number, string[]>();
    for (const problem of err.problems) {
      const m = UNSET_IN_MAPPING.exec(problem);
      if (!m) throw err;
      const i = Number(m[1]);
      byIndex.set(i, [...(byIndex.get(i) ?? []), problem]);
    }
    const { snapshot } = await loadConfig(host, new Set(byIndex.keys()));
    const unavailable = [...byIndex].map(([i, problems]) => {
      const path = (snapshot.mappingConfigs[i] as { match?: { path?: string } }).match?.path;
      return { name: path?.trim().replace(/^\/+|\/+$/g, ''), problems };
    });
    return { snapshot, unavailable };
  }
}

export async function dryRun(
  request: DryRunRequest,
  snap: HooksSnapshot,
  host: GatewayHost,
  transforms: Transforms,
  unavailable: readonly UnavailableMapping[] = [],
): Promise<DryRunResult> {
  const result: DryRunResult = { transforms: [], wakes: [], jobs: [], dedupeKeys: [], reins: [] };
  const blocked = unavailable.filter((u) => u.name === undefined || u.name === request.name);
  if (blocked.length) {
    result.unavailable = blocked.flatMap((u) => u.problems);
    return result;
  }
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
    // What the live path decides before the body (the token, the body's size) as far as a dry run can.
    reinsOf(target, snap, request.source, result);
    if (target.kind === 'mapped' && target.candidates.length === 0) throw refuse.notFound();
    if (body.length > target.maxBodyBytes) throw refuse.payloadTooLarge(target.maxBodyBytes);
    if (target.kind !== 'mapped' || !target.verifier) result.verification = 'hook token (not checked by the dry run)';
    const facts: DryRunFacts = { headers, name, query: request.query, result };
    const plan = await planRequest(target, body, facts, snap, REPORTED_PROOFS);
    result.plan = plan;
    if (plan.kind === 'handshake') {
      result.target = `${plan.mapping.where}: a ${plan.mapping.handshake!.kind} handshake, acting on nothing`;
      result.answer = { status: 200, body: plan.answer as Outcome['body'] };
      return result;
    }
    if (plan.kind === 'ignored') {
      result.target = 'none: no mapping takes it, so it is ignored, acting on nothing';
      const payload = await parsePayload(target, body, firstHeader(facts.headers['content-type']));
      result.ignored = plan.candidates.map((m) => ({ mapping: m.where, failed: whyNot(m, facts, payload) }));
      result.answer = { status: 200, body: { ok: true, ignored: true } };
      return result;
    }
    result.target = plan.kind === 'endpoint' ? `the ${plan.endpoint} endpoint` : plan.mapping.where;
    const hook = plan.kind === 'endpoint' ? plan.endpoint : plan.mapping.id;
    result.hook = { name: hook, paused: request.paused?.has(hook) === true };
    result.dedupeKeys = planKeys(plan);
    const action =
      plan.kind === 'endpoint'
        ? plan.action
        : await buildMappedAction(plan.mapping, plan.payload, plan.request, recording, host.logger);
    const { jobs, outcome } = prepareAction(action, snap, host);
    result.wakes = action.wakes;
    result.jobs = jobs;
    const reply = replyOf(plan, outcome);
    const kept = result.hook.paused ? undefined : spendOf(plan, jobs.length, snap, request.budgetWindows, result);
    const usual = result.hook.paused
      ? { status: 202, body: { ok: true, held: true, requestId: '<its request id>' } }
      : (kept ?? outcome);
    result.answer =
      reply && !result.hook.paused && !kept
        ? replyAsOutcome(reply, outcome)
        : {
            ...usual,
            status: answeredStatus(plan.kind === 'endpoint' ? plan.endpoint : 'mapping', usual.status, snap),
          };
  } catch (err) {
    result.refusal = err instanceof HookError ? err : refuse.internal();
  }
  return result;
}

/**
 * A request whose runs would join a batch, or pass a budget: its answer, and `result.spend` saying
 * why; undefined when its runs would simply start. A budget refusing throws its 429.
 */
function spendOf(
  plan: ActingPlan,
  runs: number,
  snap: HooksSnapshot,
  windows: ReadonlyMap<string, WindowUse> | undefined,
  result: DryRunResult,
): Outcome | undefined {
  if (!runs) return undefined;
  const hook = plan.kind === 'endpoint' ? plan.endpoint : plan.mapping.id;
  if (plan.kind === 'mapped' && plan.mapping.coalesce && runs === 1) {
    const { seconds, maxItems } = plan.mapping.coalesce;
    result.spend = `would be coalesced: its run joins the batch of its key (${maxItems} requests within ${seconds} s at most)`;
    return { status: 202, body: { ok: true, runId: "<the batch's run id>", coalesced: true } };
  }
  const now = Date.now();
  for (const ref of budgetsOf(snap, hook)) {
    const endsAt = overBudget(ref.budget, windows?.get(ref.key), runs, now);
    if (endsAt === undefined) continue;
    const spent = `${ref.name}'s budget of ${limitText(ref.budget)} per ${ref.budget.perSeconds} s is spent until ${new Date(endsAt).toISOString()}`;
    const { overflow } = ref.budget;
    if (overflow === 'refuse') {
      result.spend = `would be refused: ${spent}`;
      throw refuse.budgetExhausted(Math.max(1, Math.ceil((endsAt - now) / 1000)));
    }
    if (overflow === 'hold') {
      result.spend = `would be held by its budget: ${spent}`;
      return { status: 202, body: { ok: true, held: true, requestId: '<its request id>' } };
    }
    result.spend = `would be digested: ${spent}; listed in one main-session event when the window ends`;
    return { status: 202, body: { ok: true, digested: true, requestId: '<its request id>' } };
  }
  return undefined;
}

/**
 * The allowlists (tried with `source` when given: a refusal ends the dry run as it ends the request)
 * and the rate limit, which the dry run names but never counts.
 */
function reinsOf(target: Target, snap: HooksSnapshot, source: string | undefined, result: DryRunResult): void {
  const lists: [string, NonNullable<HooksSnapshot['allowedSources']>][] = [];
  if (snap.allowedSources) lists.push(['hooks.allowedSources', snap.allowedSources]);
  if (target.sources) {
    const named =
      target.kind === 'mapped' ? target.candidates.find((m) => m.allowedSources === target.sources) : undefined;
    lists.push([`${named?.where ?? 'the mapping'}.allowedSources`, target.sources]);
  }
  for (const [key, list] of lists) {
    if (source === undefined) {
      result.reins.push(`source: ${key} (not checked: no --source given)`);
      continue;
    }
    const admitted = isIP(source) !== 0 && list.contains(source);
    result.reins.push(`source: ${source} ${admitted ? 'is admitted by' : 'is not in'} ${key}`);
    if (!admitted) throw refuse.sourceNotAllowed();
  }
  const limit = target.rateLimit;
  if (limit) {
    const per = limit.perClient ? ' per client address' : '';
    result.reins.push(
      `rate limit: ${limit.requests} requests per ${limit.perSeconds} s${per} for ${limit.hook} (not counted by the dry run)`,
    );
  }
}

/** Why `m` did not take the request: its match.source, or its first condition not met and what was there. */
function whyNot(m: CompiledMapping, facts: RequestFacts, payload: Record<string, unknown>): string {
  if (m.matchSource !== undefined && m.matchSource !== payload.source)
    return `match.source ${JSON.stringify(m.matchSource)} (the payload's source is ${JSON.stringify(payload.source)})`;
  const failed = m.filter && failingCondition(m.filter, facts.headers, payload);
  if (!failed) return 'nothing (it would take it)';
  const seen = failed.seen(facts.headers, payload);
  return `${failed.key}: ${failed.text} (found ${seen === undefined ? 'nothing' : JSON.stringify(seen)})`;
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The keys the plan would be deduplicated by: one, one per forEach item that renders one, or none. */
function planKeys(plan: ActingPlan): DedupeKey[] {
  if (plan.kind !== 'each') return plan.key ? [plan.key] : [];
  const keys: DedupeKey[] = [];
  for (const { key } of plan.items) if (key !== undefined) keys.push({ scope: plan.scope, key });
  return keys;
}

interface DryRunFacts extends RequestFacts {
  readonly result: DryRunResult;
}

/** The dry run reports a signature instead of counting a failure; one not sent is not checked. */
const REPORTED_PROOFS: ProofChecks<DryRunFacts> = {
  verify({ headers, result }, verifier, body) {
    if (!verifier.proofHeaders.some((h) => headers[h] !== undefined)) {
      result.verification = `${verifier.scheme} signature: not checked (no ${verifier.proofHeaders.join(' or ')} header given)`;
      return false;
    }
    const outcome = verifier.verify({ headers, body, nowMs: Date.now() });
    if (!outcome.ok) {
      result.verification = `${verifier.scheme} signature: ${outcome.expired ? 'expired' : 'invalid'}`;
      throw outcome.expired ? refuse.signatureExpired() : refuse.signatureInvalid();
    }
    result.verification = `${verifier.scheme} signature: valid`;
    return true;
  },
  stale({ result }, verifier) {
    result.verification = `${verifier.scheme} signature: expired`;
    throw refuse.signatureExpired();
  },
};

/** A mapping's `respond` as the answer shown: a text body is shown as the string it is. */
function replyAsOutcome(reply: Reply, usual: Outcome): Outcome {
  if (reply.text !== undefined) return { status: reply.status, body: { text: reply.text } };
  return { status: reply.status, body: (reply.json ?? usual.body) as Outcome['body'] };
}
