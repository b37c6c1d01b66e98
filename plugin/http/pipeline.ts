// The request pipeline, in DESIGN.md's order: path prefix, query token, method, address lock, token,
// sub-path, body, payload. Each stage either passes or answers; data flows one way.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HookError } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import type { HooksSnapshot } from '../config/resolve.ts';
import { extractToken, tokenMatches } from '../auth/token.ts';
import type { AuthFailureLimiter } from '../auth/limiter.ts';
import type { RefusalLog } from './refusal-log.ts';
import { clientAddress } from './client-address.ts';
import { parseJsonObject, readBody, tooLarge } from './body.ts';
import { answersWritten, internalError, sendEmpty, sendError, sendJson } from './respond.ts';
import { parseWakePayload, runWake } from '../actions/wake.ts';
import { parseAgentPayload, prepareAgentJob } from '../actions/agent.ts';
import type { RunService } from '../actions/run-service.ts';
import { requestId } from './request-id.ts';
import { awaitsContinue } from './continue.ts';
import type { TransformRunner } from '../mappings/transform-runner.ts';
import { buildMappedAction, candidatesFor, pickMapping } from '../mappings/dispatch.ts';

export interface PipelineDeps {
  host: GatewayHost;
  limiter: AuthFailureLimiter;
  refusals: RefusalLog;
  runs: RunService;
  transforms: TransformRunner;
}

const TOKEN_IN_QUERY = new HookError(
  400,
  'token_in_query',
  'the token may not be sent in the query string; use the Authorization: Bearer header',
);
const METHOD_NOT_ALLOWED = new HookError(405, 'method_not_allowed', 'only POST is accepted', { allow: 'POST' });
const UNAUTHORIZED = new HookError(401, 'unauthorized', 'missing or wrong hook token');
const NOT_FOUND = new HookError(404, 'not_found', 'no such hook');
/** The query of a URL without one; shared, since templates and transforms only read it. */
const NO_QUERY = new URLSearchParams();

/** What the later stages need of a request that passed admission. */
interface Admitted {
  url: string;
  q: number;
  sub: string;
  id: string;
}

/** True when the request was ours (and has been answered); false leaves it to the host. */
export async function handleHookRequest(
  req: IncomingMessage,
  res: ServerResponse,
  snap: HooksSnapshot,
  deps: PipelineDeps,
): Promise<boolean> {
  if (!snap.enabled) return false;
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const pathname = q === -1 ? url : url.slice(0, q);
  const sub = subPath(pathname, snap.path);
  if (sub === undefined) return false;

  const started = performance.now();
  const id = requestId();
  const client = clientAddress(req, snap.trustedProxies);
  // Stages answer with an error value instead of throwing: a promise rejected before anyone awaits
  // it costs Node's unhandled-rejection bookkeeping, on exactly the paths an attacker can flood.
  const refused = admit(req, snap, deps, url, q, sub, client);
  const failure = refused ?? (await serve(req, res, snap, deps, { url, q, sub, id }));
  if (failure) {
    // A client still waiting for "100 Continue" never sent its body: the connection cannot carry
    // another request.
    const unsent = awaitsContinue(req);
    sendError(res, unsent ? closing(failure) : failure, id);
    // The body was not read to its end: drop the connection once the answer is out.
    if (unsent || failure.headers?.connection === 'close') res.once('finish', () => req.destroy());
  }
  // The log line carries the status that went out, and the host hears back once the answer is written.
  await answersWritten();
  const fields = {
    requestId: id,
    method: req.method,
    path: pathname,
    status: res.statusCode,
    ms: Math.round((performance.now() - started) * 10) / 10,
    client,
  };
  // Only a 404 is refused after the token was accepted.
  if (refused && refused !== NOT_FOUND) deps.refusals.note(fields);
  else deps.host.logger.info('hook request', fields);
  return true;
}

/** The part after the prefix: '' for the bare prefix, undefined when the path is not ours. */
function subPath(pathname: string, prefix: string): string | undefined {
  if (!pathname.startsWith(prefix)) return undefined;
  if (pathname.length === prefix.length) return '';
  if (pathname.charCodeAt(prefix.length) !== 47 /* / */) return undefined;
  return pathname.slice(prefix.length + 1);
}

/** Query token, method, address lock, token, name: everything decided before the body is read. */
function admit(
  req: IncomingMessage,
  snap: HooksSnapshot,
  deps: PipelineDeps,
  url: string,
  q: number,
  sub: string,
  client: string,
): HookError | undefined {
  if (q !== -1 && new URLSearchParams(url.slice(q + 1)).has('token')) return TOKEN_IN_QUERY;
  if (req.method !== 'POST') return METHOD_NOT_ALLOWED;
  const lockedFor = deps.limiter.lockedFor(client);
  if (lockedFor > 0) return rateLimited(lockedFor);
  if (!tokenMatches(extractToken(req.headers), snap.tokenDigest)) {
    const lockSeconds = deps.limiter.recordFailure(client, snap.authRateLimit);
    if (lockSeconds > 0) deps.host.logger.warn('client address locked after repeated authentication failures', { client, seconds: lockSeconds });
    return UNAUTHORIZED;
  }
  if (sub !== 'wake' && sub !== 'agent' && candidatesFor(sub, snap.mappings).length === 0) return NOT_FOUND;
  return undefined;
}

/** Body, payload and action. Never rejects: every failure comes back as a HookError. */
async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  snap: HooksSnapshot,
  deps: PipelineDeps,
  { url, q, sub, id }: Admitted,
): Promise<HookError | undefined> {
  try {
    if (sub === 'wake' || sub === 'agent') {
      const payload = parseJsonObject(await readBody(req, res, snap.maxBodyBytes, snap.bodyTimeoutMs));
      if (sub === 'wake') {
        sendJson(res, 200, await runWake(parseWakePayload(payload), deps.host), undefined, id);
        return undefined;
      }
      const job = prepareAgentJob(parseAgentPayload(payload), snap, deps.host);
      const recorded = deps.runs.submit(job);
      if (recorded) await recorded;
      sendJson(res, 202, { ok: true, runId: job.runId }, undefined, id);
      return undefined;
    }
    await serveMapped(req, res, snap, deps, { url, q, sub, id });
    return undefined;
  } catch (err) {
    if (err instanceof HookError) return err;
    deps.host.logger.error('hook request failed', { requestId: id, reason: err instanceof Error ? err.message : String(err) });
    return internalError();
  }
}

/** Mapped hooks: the name narrowed the candidates before the body was read; the payload picks one. */
async function serveMapped(
  req: IncomingMessage,
  res: ServerResponse,
  snap: HooksSnapshot,
  deps: PipelineDeps,
  { url, q, sub, id }: Admitted,
): Promise<void> {
  const candidates = candidatesFor(sub, snap.mappings);
  let limit = 0;
  for (const m of candidates) limit = Math.max(limit, m.maxBodyBytes ?? snap.maxBodyBytes);
  const body = await readBody(req, res, limit, snap.bodyTimeoutMs);
  const payload = parseJsonObject(body);
  const mapping = pickMapping(candidates, payload);
  if (!mapping) throw NOT_FOUND;
  const own = mapping.maxBodyBytes ?? snap.maxBodyBytes;
  if (body.length > own) throw tooLarge(own);
  const query = q === -1 ? NO_QUERY : new URLSearchParams(url.slice(q + 1));
  const built = buildMappedAction(mapping, payload, { headers: req.headers, query, name: sub }, deps.transforms, deps.host.logger);
  const action = built instanceof Promise ? await built : built;
  if (action.kind === 'skip') {
    sendEmpty(res, 204, id);
  } else if (action.kind === 'wake') {
    sendJson(res, 200, await runWake(action.spec, deps.host), undefined, id);
  } else {
    const jobs = action.specs.map((spec) => prepareAgentJob(spec, snap, deps.host));
    const recorded = deps.runs.submit(...jobs);
    if (recorded) await recorded;
    const runIds = jobs.map((j) => j.runId);
    sendJson(res, 202, runIds.length === 1 ? { ok: true, runId: runIds[0] } : { ok: true, runId: runIds[0], runIds }, undefined, id);
  }
}

/** The same refusal, answered with Connection: close. */
function closing(err: HookError): HookError {
  return new HookError(err.status, err.code, err.message, { ...err.headers, connection: 'close' });
}

function rateLimited(seconds: number): HookError {
  return new HookError(429, 'rate_limited', `too many failed authentications; retry in ${seconds} s`, {
    'retry-after': String(seconds),
  });
}
