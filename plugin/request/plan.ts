// The request as a plan: what a hook request would do, decided from its target, headers and body with
// nothing done yet. planRequest runs the `plan` phases of the list in lifecycle.ts (verify, parse,
// fresh, own, keys) in that order and returns a Plan or throws the first refusal. The live path
// carries the plan out (act.ts); `hookgate webhooks test` (plugin/dry-run.ts) shows it.
import type { IncomingHttpHeaders } from 'node:http';
import { refuse } from '../errors.ts';
import type { HooksSnapshot } from './snapshot.ts';
import type { Action, Outcome } from '../action.ts';
import { parseWakePayload } from '../actions/wake.ts';
import { parseAgentPayload } from '../actions/agent.ts';
import type { CompiledMapping } from '../mappings/mapping.ts';
import { pickMapping } from '../mappings/mapping-index.ts';
import { forEachItems, type MappedRequest } from '../mappings/build-action.ts';
import {
  derivedKey,
  endpointKey,
  itemKeys,
  mappingKey,
  mappingScope,
  validHeaderKey,
  type DedupeKey,
  type KeyedItem,
} from './idempotency.ts';
import type { Verifier } from '../verify/verifier.ts';
import { renderReply, type Reply } from '../mappings/respond.ts';
import { ownBodyLimit, parsePayload, type Target } from './resolve.ts';

/** What a request is, beside its body: its headers, the name after hooks.path, its query. */
export interface RequestFacts {
  readonly headers: IncomingHttpHeaders;
  readonly name: string;
  /** The query string without '?', or undefined when there is none. */
  readonly query: string | undefined;
}

/** A resolved request, nothing done yet. */
export type Plan =
  /**
   * Authenticated, but no mapping's filters take it: answered 200 `{ ok: true, ignored: true }`,
   * acting on nothing. `candidates` are the mappings that did not take it (the dry run says why).
   */
  | { readonly kind: 'ignored'; readonly candidates: readonly CompiledMapping[] }
  /** A signed handshake (Slack, echo): answered with its challenge, acting on nothing. */
  | { readonly kind: 'handshake'; readonly mapping: CompiledMapping; readonly answer: { challenge: unknown } }
  /** The wake or agent endpoint: its checked action. */
  | {
      readonly kind: 'endpoint';
      readonly endpoint: 'wake' | 'agent';
      readonly action: Action;
      readonly key: DedupeKey | undefined;
    }
  /** The mapping that owns the payload: one action (a forEach's items merged), built when carried out. */
  | {
      readonly kind: 'mapped';
      readonly mapping: CompiledMapping;
      readonly request: MappedRequest;
      readonly payload: Record<string, unknown>;
      readonly key: DedupeKey | undefined;
    }
  /** A forEach whose dedupe.key reads the item: each item acts once under its own key. */
  | {
      readonly kind: 'each';
      readonly mapping: CompiledMapping;
      readonly request: MappedRequest;
      readonly payload: Record<string, unknown>;
      readonly scope: string;
      readonly items: readonly KeyedItem[];
    };

/** A plan that acts: everything but a handshake or an ignored request. */
export type ActingPlan = Exclude<Plan, { kind: 'handshake' | 'ignored' }>;

/**
 * How a signed request's proof is judged: the live path refuses (and counts the failure against the
 * address), the dry run reports. `verify` returns whether the proof was checked; `stale` throws.
 */
export interface ProofChecks<R extends RequestFacts> {
  verify(request: R, verifier: Verifier, body: Buffer, snap: HooksSnapshot): boolean;
  stale(request: R, verifier: Verifier, snap: HooksSnapshot): never;
}

/** The query of a URL without one; shared, since templates and transforms only read it. */
const NO_QUERY = new URLSearchParams();

/** The plan of a request whose body has been received; rejects with the refusal of the first phase that refuses. */
export async function planRequest<R extends RequestFacts>(
  target: Target,
  body: Buffer,
  request: R,
  snap: HooksSnapshot,
  checks: ProofChecks<R>,
): Promise<Plan> {
  // verify
  const verifier = target.kind === 'mapped' ? target.verifier : undefined;
  const verified = verifier !== undefined && checks.verify(request, verifier, body, snap);
  // parse
  const parsed = parsePayload(target, body, firstValue(request.headers['content-type']));
  const payload = parsed instanceof Promise ? await parsed : parsed;
  if (target.kind !== 'mapped') {
    const action = endpointAction(target.kind, payload);
    return { kind: 'endpoint', endpoint: target.kind, action, key: endpointKey(target.kind, request.headers) };
  }
  // fresh: for senders that sign a timestamp inside the payload (Linear)
  if (verified && verifier.fresh && !verifier.fresh(payload, Date.now())) checks.stale(request, verifier, snap);
  if (verifier) {
    // A handshake proves the endpoint, whatever the filters say of it.
    for (const mapping of target.candidates) {
      const { handshake } = mapping;
      if (handshake === undefined || handshake.kind === 'meta') continue;
      const answer = handshake.answer(payload);
      if (answer) return { kind: 'handshake', mapping, answer };
    }
  }
  // own (and filters): the first mapping that takes the request, then its own body limit
  const mapping = pickMapping(target.candidates, request.headers, payload);
  if (!mapping) {
    // Filters that took nothing: ignored, so that senders do not mark the delivery as failed.
    if (target.candidates.some((m) => m.filter !== undefined))
      return { kind: 'ignored', candidates: target.candidates };
    throw refuse.notFound();
  }
  const own = ownBodyLimit(mapping, snap);
  if (body.length > own) throw refuse.payloadTooLarge(own);
  const mapped = mappedRequest(request, own, snap.path);
  // keys
  const { dedupeKey } = mapping;
  if (mapping.forEach && dedupeKey?.perItem) {
    const items = itemKeys(dedupeKey, mapped, payload, forEachItems(mapping, payload)!);
    return { kind: 'each', mapping, request: mapped, payload, scope: mappingScope(mapping), items };
  }
  return { kind: 'mapped', mapping, request: mapped, payload, key: mappingKey(mapping, mapped, payload) };
}

/**
 * The key the plan will pick, when the headers alone decide it: the Idempotency-Key of wake and
 * agent; for a name only one mapping owns, its sender's delivery id from a header, else the header
 * key. Undefined whenever the body could change the key or what a duplicate is answered (a dedupe.key
 * template, a `respond`, a handshake, a timestamp signed inside the payload), or the key is invalid
 * (the plan refuses it). With it, a key already answered is answered before the body is parsed.
 */
export function keyBeforeBody(target: Target, headers: IncomingHttpHeaders): DedupeKey | undefined {
  if (target.kind !== 'mapped') {
    const key = validHeaderKey(headers);
    return key === undefined ? undefined : { scope: target.kind, key };
  }
  if (target.candidates.length !== 1) return undefined;
  const mapping = target.candidates[0]!;
  const { verifier } = mapping;
  // Filters may ignore it: an ignored request keeps no key, so a key seen before is its first answer.
  if (mapping.dedupeKey || mapping.respond || mapping.handshake || verifier?.fresh) return undefined;
  const fromSender = verifier?.headerDeliveryId;
  if (verifier && !fromSender) return undefined;
  const key = derivedKey(fromSender?.(headers)) ?? validHeaderKey(headers);
  return key === undefined ? undefined : { scope: mappingScope(mapping), key };
}

/** A mapping's `respond` once its action was accepted (not skipped), rendered for this request. */
export function replyOf(plan: ActingPlan, outcome: Outcome): Reply | undefined {
  if (plan.kind === 'endpoint') return undefined;
  const { respond } = plan.mapping;
  if (!respond || (outcome.status !== 200 && outcome.status !== 202)) return undefined;
  const { payload, request } = plan;
  return renderReply(respond, { payload, headers: request.headers, query: request.query, path: request.name });
}

/**
 * The status an outcome goes out with: /hooks/agent's 202 becomes 200 when
 * hooks.endpoints.agent.acceptedStatus says so (the body is the same); a mapping answers by `respond`.
 */
export function answeredStatus(
  endpoint: string,
  status: number,
  snap: Pick<HooksSnapshot, 'agentAcceptedStatus'>,
): number {
  return endpoint === 'agent' && status === 202 ? snap.agentAcceptedStatus : status;
}

/** What the mapping's templates and transform see of the request. */
function mappedRequest(facts: RequestFacts, bodyLimit: number, hooksPath: string): MappedRequest {
  const { headers, name, query } = facts;
  return {
    headers,
    query: query === undefined ? NO_QUERY : new URLSearchParams(query),
    name,
    url: `http://localhost${hooksPath}/${name}${query === undefined ? '' : `?${query}`}`,
    bodyLimit,
  };
}

/** The action of the wake and agent endpoints: their payload, checked. */
function endpointAction(kind: 'wake' | 'agent', payload: Record<string, unknown>): Action {
  return kind === 'wake'
    ? { wakes: [parseWakePayload(payload)], runs: [] }
    : { wakes: [], runs: [parseAgentPayload(payload)], waitForCompletion: payload.waitForCompletion === true };
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
