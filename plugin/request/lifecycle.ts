// The life of a hook request, as named phases in the documented order of checks (README, Errors):
//   route        is the path under hooks.path? (if not, the host keeps the request)
//   admit        token in the query, method (GET only for a Meta handshake, answered there), address lock
//   target       wake, agent, a signed mapping, or the mappings that may own the name
//   rein         the source allowlists (hooks.allowedSources, the name's own): 403 source_not_allowed;
//                then the hook's rate limit: 429 hook_rate_limited. Neither is an authentication
//                failure, and both come before the token, the signature and the body
//   authenticate the hook token (not for a signed mapping); then 404 when no mapping owns the name;
//                for a signed mapping, a request without any of its proof headers is refused here
//   receive      the body, within the target's limit and the body timeout
//   repeat       a key the headers alone decide (plan.ts keyBeforeBody), answered here before: the
//                first answer again (422 for another body), after a signed mapping's signature, the
//                body never parsed
//   plan         what the request would do, decided with nothing done (plan.ts; the dry run calls it too):
//     verify     a signed mapping's signature over the raw bytes (instead of the token)
//     parse      a JSON object, a form or a multipart body (for a mapping, one that nests no deeper than
//                templates can walk)
//     fresh      a timestamp signed inside the payload (Linear); then a signed handshake (Slack, echo)
//                is answered with its challenge, acting on nothing
//     own        the endpoint's payload is checked, or the first mapping whose source and filters take
//                the payload is picked and held to its own body limit; when filters took nothing, the
//                request is ignored: 200 { ok: true, ignored: true }, acting on nothing
//     keys       the idempotency key (the header, a mapping's dedupe.key or its sender's delivery id;
//                one per item for a forEach whose key reads the item)
//   act          once per key (act.ts): a key seen before gets the first answer again;
//                otherwise the mapping builds its action (templates, preset, transform; every forEach
//                item within maxActionBytes before any acts) and it is carried out (actions/execute.ts),
//                or held when its hook is paused (pauses/hook-pauses.ts)
//   answer       the outcome (or the mapping's `respond`), or the refusal any phase threw, and one log line
// Data flows one way; a phase either returns or throws a HookError, caught in one place.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HookError, refuse } from '../errors.ts';
import type { GatewayHost, Logger } from '../host.ts';
import type { HooksSnapshot } from './snapshot.ts';
import { extractToken, matchesAnyToken } from '../auth/token.ts';
import type { AuthLimiter } from '../auth/limiter.ts';
import type { Actor, Acted } from './act.ts';
import { bodyHashOf, type BodyHash } from '../dedupe/body-hash.ts';
import type { Verifier } from '../verify/verifier.ts';
import type { HookMetrics } from '../observe/metrics.ts';
import type { RequestLog } from '../request-log/request-log.ts';
import type { AnswerBatch } from '../http/answers.ts';
import type { BodyReceiver } from '../http/body.ts';
import { clientAddress, clientSource } from '../http/client-address.ts';
import type { HookRateLimiter } from '../auth/hook-rate-limit.ts';
import type { RefusalLog } from '../http/refusal-log.ts';
import { logFieldsOf, requestEntryOf, type Answered, type Trace } from './request-record.ts';
import { isKnownName, metaHandshakeOf, targetOf, type Target } from './resolve.ts';
import {
  keyBeforeBody,
  planRequest,
  replyOf,
  type ActingPlan,
  type Plan,
  type ProofChecks,
  type RequestFacts,
} from './plan.ts';
import { hookTokenCredential, mappingCredential } from '../auth/credentials.ts';
import { metaChallenge, type Handshake } from '../mappings/handshake.ts';
import type { CompiledMapping } from '../mappings/mapping.ts';
import { requestId } from '../http/request-id.ts';
import { splitTarget } from '../http/request-target.ts';
import { errorMessage } from '../util/errors.ts';
import { runIdsOf } from '../runs/wait-answer.ts';

/** What the lifecycle uses; each plugin instance owns one of each. */
export interface LifecycleParts {
  host: GatewayHost;
  limiter: AuthLimiter;
  /** Rate limits per hook (shared-rate-limit.ts tells it what other instances admitted). */
  rateLimits: HookRateLimiter;
  refusals: RefusalLog;
  /** For warnings anyone can cause: rate-limited. */
  warnings: Pick<Logger, 'warn'>;
  actor: Actor;
  answers: AnswerBatch;
  bodies: BodyReceiver;
  metrics: HookMetrics;
  requests: RequestLog;
}

/** What the phases after routing know of the request. */
interface HookRequest extends RequestFacts {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly id: string;
  readonly client: string;
  /** The name after the prefix: '' for the bare prefix. */
  readonly name: string;
  readonly trace: Trace;
}

type MetaHandshake = Extract<Handshake, { kind: 'meta' }>;

/** The answer to a request no mapping's filters take. */
const IGNORED = Object.freeze({ ok: true, ignored: true });

/** Marks the answer to a repeated idempotency key. */
const DUPLICATE = Object.freeze({ 'x-hookgate-duplicate': '1' });

/** What the host knows of a request that the request itself does not say. */
export interface HandleOptions {
  /**
   * The host took the request from 'checkContinue': the client waits for "100 Continue", which is
   * sent only when the body is about to be read, so a refusal decided before then goes out instead.
   */
  expectsContinue?: boolean;
}

export class HookLifecycle {
  constructor(private readonly parts: LifecycleParts) {}

  /** True when the request was ours and has been answered; false leaves it to the host. */
  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    snap: HooksSnapshot,
    options: HandleOptions = {},
  ): Promise<boolean> {
    // route
    if (!snap.enabled) return false;
    const { pathname, query } = splitTarget(req.url ?? '/');
    const name = nameUnder(pathname, snap.path);
    if (name === undefined) return false;

    const started = performance.now();
    const trace: Trace = { authenticated: false, duplicate: false, endpoint: 'unknown', mapping: '', bytes: 0 };
    const request: HookRequest = {
      req,
      res,
      headers: req.headers,
      id: requestId(),
      client: clientAddress(req, snap.trustedProxies),
      name,
      query,
      trace,
    };
    const { answers } = this.parts;
    // The target first (a lookup, no check): refusals in admit count under the endpoint they were for.
    const target = targetOf(name, snap);
    traceTarget(trace, target);
    try {
      const meta = metaHandshakeOf(target);
      const verifier = target.kind === 'mapped' ? target.verifier : undefined;
      // Refusals anyone can flood (429, 401) come back as values rather than throws: a throw and its
      // catch cost more than the rest of such an answer.
      const refused =
        this.admit(request, meta !== undefined) ??
        this.rein(request, target, snap) ??
        (meta && req.method === 'GET'
          ? undefined
          : verifier
            ? this.requireProof(request, verifier, snap)
            : this.authenticate(request, snap, target));
      trace.checkedAt = performance.now();
      if (refused) {
        this.refuse(request, refused);
        return await this.finish(request, pathname, started, snap, trace);
      }
      if (meta && req.method === 'GET') {
        answers.sendText(res, 200, this.metaHandshake(request, meta, snap), request.id);
        trace.authenticated = true;
        return await this.finish(request, pathname, started, snap, trace);
      }
      const received = await this.receive(request, target, snap, options.expectsContinue === true);
      trace.plannedAt = performance.now();
      if ('repeated' in received) {
        this.answer(request, undefined, received.repeated);
        return await this.finish(request, pathname, started, snap, trace);
      }
      const { plan, hash } = received;
      if (plan.kind === 'handshake') {
        answers.send(res, 200, plan.answer, request.id);
        return await this.finish(request, pathname, started, snap, trace);
      }
      if (plan.kind === 'ignored') {
        trace.ignored = true;
        answers.send(res, 200, IGNORED, request.id);
        return await this.finish(request, pathname, started, snap, trace);
      }
      if (plan.kind !== 'endpoint') trace.mapping = plan.mapping.id;
      this.answer(request, plan, await this.parts.actor.act(plan, snap, request.id, res, hash, request.client));
    } catch (err) {
      this.refuse(request, this.refusalOf(err, request));
    }

    return this.finish(request, pathname, started, snap, trace);
  }

  /**
   * receive, repeat and plan, in a frame of their own: a suspended async function keeps its locals,
   * so the raw body held here would live on through the action's durable write.
   */
  private async receive(
    request: HookRequest,
    target: Target,
    snap: HooksSnapshot,
    expectsContinue: boolean,
  ): Promise<{ repeated: Acted } | { plan: Plan; hash: BodyHash | undefined }> {
    const { req, res, trace } = request;
    const body = await this.parts.bodies.read(req, res, target.maxBodyBytes, snap.bodyTimeoutMs, expectsContinue);
    trace.bytes = body.length;
    // repeat: a key the headers decide, answered here before: the first answer, the body unparsed.
    const known = keyBeforeBody(target, req.headers);
    const hash = known && bodyHashOf(body);
    if (known && hash) {
      const verifier = target.kind === 'mapped' ? target.verifier : undefined;
      if (verifier) this.#proofs.verify(request, verifier, body, snap);
      const repeated = this.parts.actor.repeated(known, hash);
      if (repeated) return { repeated };
    }
    const plan = await planRequest(target, body, request, snap, this.#proofs);
    // The hash kept beside a key the plan picked from the body.
    const keyed = plan.kind === 'endpoint' || plan.kind === 'mapped' ? plan.key : undefined;
    return { plan, hash: hash || (keyed && bodyHashOf(body)) };
  }

  private refuse({ res, id, trace }: HookRequest, refusal: HookError): void {
    trace.code = refusal.code;
    trace.reason = refusal.message;
    this.parts.answers.sendError(res, refusal, id);
  }

  /** The outcome as answered: a mapping's `respond` when it has one, marked when it repeats a first answer. */
  private answer({ res, id, trace }: HookRequest, plan: ActingPlan | undefined, outcome: Acted): void {
    trace.actedAt = performance.now();
    const { answers } = this.parts;
    trace.duplicate = outcome.duplicate;
    trace.key = outcome.key;
    trace.held = outcome.held;
    trace.waited = outcome.waited;
    const runIds = runIdsOf(outcome.body);
    if (runIds.length) trace.runIds = runIds;
    const headers = trace.duplicate ? DUPLICATE : undefined;
    // A held request is answered as held, whatever its mapping's `respond` says for an accepted one.
    const reply = outcome.body?.held === true || !plan ? undefined : replyOf(plan, outcome);
    if (reply?.text !== undefined) answers.sendText(res, reply.status, reply.text, id, headers);
    else
      answers.send(
        res,
        reply?.status ?? outcome.status,
        reply ? (reply.json ?? outcome.body) : outcome.body,
        id,
        headers,
      );
  }

  /** Logs, counts and records the request once its answer is out; the host hears back after that. */
  private async finish(
    request: HookRequest,
    pathname: string,
    started: number,
    snap: HooksSnapshot,
    trace: Trace,
  ): Promise<true> {
    // The log line carries the status that went out, and the host hears back once the answer is written.
    await this.parts.answers.written();
    const ms = performance.now() - started;
    const status = request.res.statusCode;
    // A name no mapping is for may be anything the client typed (a token, even): not logged.
    const known = isKnownName(request.name, snap);
    const path = known ? pathname : `${snap.path}/…`;
    const answered: Answered = {
      requestId: request.id,
      method: request.req.method,
      path,
      status,
      ms: Math.round(ms * 10) / 10,
      client: request.client,
    };
    const fields = logFieldsOf(answered, trace);
    // Refusals before authentication can come from anyone, as fast as they can send: rate-limited logging.
    if (trace.authenticated) this.parts.host.logger.info('hook request', fields);
    else this.parts.refusals.note(fields);
    const { metrics } = this.parts;
    metrics.request(trace.endpoint, trace.mapping, status, ms / 1000, trace.bytes);
    if (trace.duplicate) metrics.duplicate(trace.endpoint, trace.mapping);
    if (trace.ignored) metrics.reined(trace.endpoint, trace.mapping, 'ignored');
    else if (trace.code === 'source_not_allowed' || trace.code === 'hook_rate_limited')
      metrics.reined(trace.endpoint, trace.mapping, trace.code);
    const key = trace.key ?? headerKey(request.req.headers['idempotency-key']);
    const hook =
      trace.mapping ||
      (trace.endpoint === 'wake' || trace.endpoint === 'agent' ? trace.endpoint : known ? request.name : path);
    this.parts.requests.add(requestEntryOf(answered, trace, key, hook, started, performance.now()));
    return true;
  }

  /** Token in the query, method, address lock: decided before the token is even looked at. */
  private admit({ req, query, client }: HookRequest, getAllowed: boolean): HookError | undefined {
    if (query !== undefined && new URLSearchParams(query).has('token')) return refuse.tokenInQuery();
    if (getAllowed) {
      if (req.method !== 'POST' && req.method !== 'GET')
        return refuse.methodNotAllowed('GET, POST', 'only GET and POST are accepted');
    } else if (req.method !== 'POST') return refuse.methodNotAllowed();
    const lockedFor = this.parts.limiter.lockedFor(client);
    return lockedFor > 0 ? refuse.rateLimited(lockedFor) : undefined;
  }

  /**
   * The source allowlists, then the hook's rate limit; nothing to do without them. A source is
   * compared as its full address; the limit counts the request when it admits it.
   */
  private rein({ req, client }: HookRequest, target: Target, snap: HooksSnapshot): HookError | undefined {
    const everywhere = snap.allowedSources;
    const own = target.sources;
    if (everywhere !== undefined || own !== undefined) {
      const source = clientSource(req, snap.trustedProxies);
      if (
        source === undefined ||
        (everywhere !== undefined && !everywhere.matches(source.bare, source.family)) ||
        (own !== undefined && !own.matches(source.bare, source.family))
      )
        return refuse.sourceNotAllowed();
    }
    const limit = target.rateLimit;
    if (limit === undefined) return undefined;
    const waitSeconds = this.parts.rateLimits.admit(limit, client);
    return waitSeconds > 0 ? refuse.hookRateLimited(waitSeconds) : undefined;
  }

  /** The hook token; then 404 for a name no mapping owns. */
  private authenticate(
    { req, client, trace }: HookRequest,
    snap: HooksSnapshot,
    target: Target,
  ): HookError | undefined {
    const token = extractToken(req.headers);
    if (!matchesAnyToken(token, snap.tokenDigests)) {
      this.failedAuthentication(client, snap, token === undefined ? undefined : hookTokenCredential(token));
      return refuse.unauthorized();
    }
    trace.authenticated = true;
    return target.kind === 'mapped' && target.candidates.length === 0 ? refuse.notFound() : undefined;
  }

  /** Meta's GET: the challenge when the verify token matches; a missing or wrong one counts as a failure. */
  private metaHandshake(request: HookRequest, mapping: CompiledMapping, snap: HooksSnapshot): string {
    const outcome = metaChallenge(mapping.handshake as MetaHandshake, request.query);
    if ('challenge' in outcome) return outcome.challenge;
    if (outcome.failed === 'token') {
      const { presented } = outcome;
      const credential = presented === undefined ? undefined : mappingCredential(request.name, 'meta', presented);
      this.failedAuthentication(request.client, snap, credential);
    }
    throw refuse.handshakeFailed();
  }

  /** A signed request without any of its scheme's proof headers is refused before its body is read. */
  private requireProof(request: HookRequest, verifier: Verifier, snap: HooksSnapshot): HookError | undefined {
    const { headers } = request.req;
    if (verifier.proofHeaders.some((name) => headers[name] !== undefined)) return undefined;
    return this.signatureFailure(request, verifier, snap, { expired: false });
  }

  /** The planner's proof checks: a bad or late signature is refused and counted against the address. */
  readonly #proofs: ProofChecks<HookRequest> = {
    verify: (request, verifier, body, snap) => {
      // Verified already, before the duplicate check.
      if (request.trace.authenticated) return true;
      const outcome = verifier.verify({ headers: request.headers, body, nowMs: Date.now() });
      if (!outcome.ok) throw this.signatureFailure(request, verifier, snap, outcome);
      request.trace.authenticated = true;
      return true;
    },
    stale: (request, verifier, snap) => {
      throw this.signatureFailure(request, verifier, snap, { expired: true });
    },
  };

  /** A bad or late signature counts against the address like a wrong token. */
  private signatureFailure(
    { client, name }: HookRequest,
    verifier: Verifier,
    snap: HooksSnapshot,
    outcome: { expired: boolean; presented?: string },
  ): HookError {
    this.parts.metrics.signatureFailure(verifier.scheme);
    const { presented } = outcome;
    this.failedAuthentication(
      client,
      snap,
      presented === undefined ? undefined : mappingCredential(name, verifier.scheme, presented),
    );
    return outcome.expired ? refuse.signatureExpired() : refuse.signatureInvalid();
  }

  /** Every failure counts; `credential` (what the request presented as it is) lets a rotation forgive it. */
  private failedAuthentication(client: string, snap: HooksSnapshot, credential: string | undefined): void {
    const lockSeconds = this.parts.limiter.recordFailure(client, snap.authRateLimit, credential);
    this.parts.metrics.authFailure();
    if (lockSeconds > 0) {
      this.parts.metrics.addressLocked();
      this.parts.warnings.warn('client address locked after repeated authentication failures', {
        client,
        seconds: lockSeconds,
      });
    }
  }

  /** A HookError as it is; anything else is a fault of ours, logged and answered as a 500. */
  private refusalOf(err: unknown, { id }: HookRequest): HookError {
    if (err instanceof HookError) return err;
    this.parts.host.logger.error('hook request failed', {
      requestId: id,
      reason: errorMessage(err),
    });
    return refuse.internal();
  }
}

/** The endpoint label, and for a name only one mapping owns (a signed one, say) that mapping. */
function traceTarget(trace: Trace, target: Target): void {
  if (target.kind !== 'mapped') {
    trace.endpoint = target.kind;
    return;
  }
  if (target.candidates.length === 0) return;
  trace.endpoint = 'mapping';
  if (target.candidates.length === 1) trace.mapping = target.candidates[0]!.id;
}

/** The Idempotency-Key header of a refused request, as sent (the log makes it safe to show). */
function headerKey(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The part after the prefix: '' for the bare prefix, undefined when the path is not ours. */
function nameUnder(pathname: string, prefix: string): string | undefined {
  if (!pathname.startsWith(prefix)) return undefined;
  if (pathname.length === prefix.length) return '';
  if (pathname.charCodeAt(prefix.length) !== 47 /* / */) return undefined;
  return pathname.slice(prefix.length + 1);
}
