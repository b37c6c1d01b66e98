// The life of a hook request, as named phases in the documented order of checks (README, Errors):
//   route        is the path under hooks.path? (if not, the host keeps the request)
//   admit        token in the query, method, address lock
//   target       wake, agent, a signed mapping, or the mappings that may own the name
//   authenticate the hook token (not for a signed mapping); then 404 when no mapping owns the name
//   receive      the body, within the target's limit and the body timeout
//   verify       a signed mapping's signature over the raw bytes (instead of the token)
//   parse        a JSON object or a form (for a mapping, one that nests no deeper than templates can walk);
//                the endpoint's payload is checked, or the mapping that owns this payload is picked
//   deliver      once per idempotency key (dedupe/once-delivery.ts): a key seen before gets the first
//                answer again; otherwise the mapping builds its action (templates, transform) and
//                the action is carried out (actions/execute.ts)
//   answer       the outcome, or the refusal any phase threw, and one log line
// Data flows one way; a phase either returns or throws a HookError, caught in one place.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HookError, refuse } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import type { HooksSnapshot } from '../config/snapshot.ts';
import { extractToken, matchesAnyToken } from '../auth/token.ts';
import type { AuthLimiter } from '../auth/limiter.ts';
import type { Action } from '../actions/action.ts';
import { parseWakePayload } from '../actions/wake.ts';
import { parseAgentPayload } from '../actions/agent.ts';
import type { CompiledMapping } from '../mappings/mapping.ts';
import { candidatesFor, pickMapping } from '../mappings/mapping-index.ts';
import type { MappedRequest } from '../mappings/build-action.ts';
import type { OnceDelivery } from '../dedupe/once-delivery.ts';
import type { Verifier } from '../verify/verifier.ts';
import type { AnswerBatch } from './answers.ts';
import type { BodyReceiver } from './body.ts';
import { parseJsonObject } from './body.ts';
import { parseFormObject } from './form-body.ts';
import { clientAddress } from './client-address.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.ts';
import type { RefusalLog } from './refusal-log.ts';
import { requestId } from './request-id.ts';
import { splitTarget } from './request-target.ts';

/** What the lifecycle uses; each plugin instance owns one of each. */
export interface LifecycleParts {
  host: GatewayHost;
  limiter: AuthLimiter;
  refusals: RefusalLog;
  delivery: OnceDelivery;
  answers: AnswerBatch;
  bodies: BodyReceiver;
}

/** What a request is aimed at once its name is known. */
type Target =
  | { kind: 'wake' | 'agent'; maxBodyBytes: number }
  | {
      kind: 'mapped';
      /** Empty when no mapping owns the name: 404 once the token is accepted. */
      candidates: readonly CompiledMapping[];
      maxBodyBytes: number;
      bodyFormat: 'json' | 'form';
      /** A signed name's verifier: it admits the request instead of the hook token. */
      verifier: Verifier | undefined;
    };

/** What the phases after routing know of the request. */
interface HookRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly id: string;
  readonly client: string;
  /** The name after the prefix: '' for the bare prefix. */
  readonly name: string;
  /** The query string without '?', or undefined when there is none. */
  readonly query: string | undefined;
}

/** Marks the answer to a repeated idempotency key. */
const DUPLICATE = Object.freeze({ 'x-hookgate-duplicate': '1' });

/** The query of a URL without one; shared, since templates and transforms only read it. */
const NO_QUERY = new URLSearchParams();

export class HookLifecycle {
  constructor(private readonly parts: LifecycleParts) {}

  /** True when the request was ours and has been answered; false leaves it to the host. */
  async handle(req: IncomingMessage, res: ServerResponse, snap: HooksSnapshot): Promise<boolean> {
    // route
    if (!snap.enabled) return false;
    const { pathname, query } = splitTarget(req.url ?? '/');
    const name = nameUnder(pathname, snap.path);
    if (name === undefined) return false;

    const started = performance.now();
    const request: HookRequest = {
      req,
      res,
      id: requestId(),
      client: clientAddress(req, snap.trustedProxies),
      name,
      query,
    };
    const { answers } = this.parts;
    let authenticated = false;
    let duplicate = false;
    try {
      this.admit(request);
      const target = this.target(request, snap);
      const verifier = target.kind === 'mapped' ? target.verifier : undefined;
      if (!verifier) {
        this.authenticate(request, snap);
        authenticated = true;
        if (target.kind === 'mapped' && target.candidates.length === 0) throw refuse.notFound();
      }
      const body = await this.parts.bodies.read(req, res, target.maxBodyBytes, snap.bodyTimeoutMs);
      if (verifier) {
        this.verify(request, verifier, body, snap);
        authenticated = true;
      }
      const payload = this.parse(target, body);
      if (verifier) this.checkFresh(request, verifier, payload, snap);
      const endpoint = target.kind === 'mapped' ? undefined : endpointAction(target.kind, payload);
      const mapping = target.kind === 'mapped' ? this.pick(target.candidates, payload, body.length, snap) : undefined;
      const mapped = mapping && this.mappedRequest(request, mapping, snap);
      const outcome = await this.parts.delivery.deliver(
        { kind: target.kind, headers: req.headers, endpoint, mapping, mapped, payload },
        snap,
      );
      duplicate = outcome.duplicate;
      answers.send(res, outcome.status, outcome.body, request.id, duplicate ? DUPLICATE : undefined);
    } catch (err) {
      answers.sendError(res, this.refusalOf(err, request), request.id);
    }

    return this.finish(request, pathname, started, snap, authenticated, duplicate);
  }

  /** Logs the request once its answer is out; the host hears back after that. */
  private async finish(
    request: HookRequest,
    pathname: string,
    started: number,
    snap: HooksSnapshot,
    authenticated: boolean,
    duplicate: boolean,
  ): Promise<true> {
    // The log line carries the status that went out, and the host hears back once the answer is written.
    await this.parts.answers.written();
    const fields = {
      requestId: request.id,
      method: request.req.method,
      // A name no mapping is for may be anything the client typed (a token, even): not logged.
      path: isKnownName(request.name, snap) ? pathname : `${snap.path}/…`,
      status: request.res.statusCode,
      ms: Math.round((performance.now() - started) * 10) / 10,
      client: request.client,
      ...(duplicate ? { duplicate } : {}),
    };
    // Refusals before authentication can come from anyone, as fast as they can send: rate-limited logging.
    if (authenticated) this.parts.host.logger.info('hook request', fields);
    else this.parts.refusals.note(fields);
    return true;
  }

  /** Token in the query, method, address lock: decided before the token is even looked at. */
  private admit({ req, query, client }: HookRequest): void {
    if (query !== undefined && new URLSearchParams(query).has('token')) throw refuse.tokenInQuery();
    if (req.method !== 'POST') throw refuse.methodNotAllowed();
    const lockedFor = this.parts.limiter.lockedFor(client);
    if (lockedFor > 0) throw refuse.rateLimited(lockedFor);
  }

  private authenticate({ req, client }: HookRequest, snap: HooksSnapshot): void {
    const token = extractToken(req.headers);
    if (matchesAnyToken(token, snap.tokenDigests)) return;
    this.failedAuthentication(client, snap, token ?? null);
    throw refuse.unauthorized();
  }

  /** A signed mapping's proof, over the body exactly as received. */
  private verify(request: HookRequest, verifier: Verifier, body: Buffer, snap: HooksSnapshot): void {
    const outcome = verifier.verify({ headers: request.req.headers, body, nowMs: Date.now() });
    if (!outcome.ok) throw this.signatureFailure(request, snap, outcome);
  }

  /** For senders that sign a timestamp inside the payload (Linear), once it is parsed. */
  private checkFresh(
    request: HookRequest,
    verifier: Verifier,
    payload: Record<string, unknown>,
    snap: HooksSnapshot,
  ): void {
    if (!verifier.fresh || verifier.fresh(payload, Date.now())) return;
    const proof = request.req.headers[verifier.proofHeaders[0]!];
    throw this.signatureFailure(request, snap, { expired: true, attempt: typeof proof === 'string' ? proof : null });
  }

  /** A bad or late signature counts against the address like a wrong token. */
  private signatureFailure(
    { client }: HookRequest,
    snap: HooksSnapshot,
    outcome: { expired: boolean; attempt: string | null },
  ): HookError {
    this.failedAuthentication(client, snap, outcome.attempt);
    return outcome.expired ? refuse.signatureExpired() : refuse.signatureInvalid();
  }

  private failedAuthentication(client: string, snap: HooksSnapshot, attempt: string | null): void {
    const lockSeconds = this.parts.limiter.recordFailure(client, snap.authRateLimit, attempt);
    if (lockSeconds > 0) {
      this.parts.host.logger.warn('client address locked after repeated authentication failures', {
        client,
        seconds: lockSeconds,
      });
    }
  }

  /** The endpoint or the mappings the name may belong to; the payload picks among mappings later. */
  private target({ name }: HookRequest, snap: HooksSnapshot): Target {
    if (name === 'wake' || name === 'agent') return { kind: name, maxBodyBytes: snap.maxBodyBytes };
    const candidates = candidatesFor(name, snap.mappingIndex);
    let maxBodyBytes = 0;
    for (const m of candidates) maxBodyBytes = Math.max(maxBodyBytes, m.maxBodyBytes ?? snap.maxBodyBytes);
    // Mappings with this very name decide how its body is read; mappings for any name read JSON.
    const bodyFormat = candidates.find((m) => m.matchPath === name)?.bodyFormat ?? 'json';
    const verifier = candidates.length === 1 ? candidates[0]!.verifier : undefined;
    return { kind: 'mapped', candidates, maxBodyBytes, bodyFormat, verifier };
  }

  /** The payload: a JSON object, or a form for mappings that read one. */
  private parse(target: Target, body: Buffer): Record<string, unknown> {
    if (target.kind !== 'mapped') return parseJsonObject(body);
    if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
      throw refuse.invalidPayload(`the body nests deeper than ${MAX_JSON_DEPTH} levels`);
    }
    return target.bodyFormat === 'form' ? parseFormObject(body) : parseJsonObject(body);
  }

  /** The mapping that owns this payload, within its own body limit. */
  private pick(
    candidates: readonly CompiledMapping[],
    payload: Record<string, unknown>,
    bodyBytes: number,
    snap: HooksSnapshot,
  ): CompiledMapping {
    const mapping = pickMapping(candidates, payload);
    if (!mapping) throw refuse.notFound();
    const own = mapping.maxBodyBytes ?? snap.maxBodyBytes;
    if (bodyBytes > own) throw refuse.payloadTooLarge(own);
    return mapping;
  }

  private mappedRequest(
    { req, name, query }: HookRequest,
    mapping: CompiledMapping,
    snap: HooksSnapshot,
  ): MappedRequest {
    const params = query === undefined ? NO_QUERY : new URLSearchParams(query);
    return { headers: req.headers, query: params, name, bodyLimit: mapping.maxBodyBytes ?? snap.maxBodyBytes };
  }

  /** A HookError as it is; anything else is a fault of ours, logged and answered as a 500. */
  private refusalOf(err: unknown, { id }: HookRequest): HookError {
    if (err instanceof HookError) return err;
    this.parts.host.logger.error('hook request failed', {
      requestId: id,
      reason: err instanceof Error ? err.message : String(err),
    });
    return refuse.internal();
  }
}

function isKnownName(name: string, snap: HooksSnapshot): boolean {
  return name === 'wake' || name === 'agent' || snap.mappingIndex.byName.has(name);
}

/** The action of the wake and agent endpoints: their payload, checked. */
function endpointAction(kind: 'wake' | 'agent', payload: Record<string, unknown>): Action {
  return kind === 'wake'
    ? { wakes: [parseWakePayload(payload)], runs: [] }
    : { wakes: [], runs: [parseAgentPayload(payload)] };
}

/** The part after the prefix: '' for the bare prefix, undefined when the path is not ours. */
function nameUnder(pathname: string, prefix: string): string | undefined {
  if (!pathname.startsWith(prefix)) return undefined;
  if (pathname.length === prefix.length) return '';
  if (pathname.charCodeAt(prefix.length) !== 47 /* / */) return undefined;
  return pathname.slice(prefix.length + 1);
}
