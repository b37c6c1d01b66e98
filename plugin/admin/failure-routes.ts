// The admin routes of failures and replay:
//   GET  failures?limit=N&before=<cursor>&state=open|all&hook=<name>   newest first
//   POST failures/<id>/dismiss
//   POST failures/<id>/replay[?again=1]      202 { ok, runId, replayOf, duplicate? }
//   POST runs/<runId>/replay[?again=1]       202 the same
//   POST replay { failed: true, since?: "<ISO time>", hook?: "<name>" }  → { ok, replayed, runIds }
// Bad input is a 400 that names the field; an unknown id a 404.
import { refuse } from '../errors.ts';
import { AdminAnswer, type AdminCall, type AdminRoute } from './admin-call.ts';
import type { Failure, FailurePage, FailureQuery } from '../failures/failures.ts';
import type { Replayer } from '../failures/replay.ts';

/** The book as the routes use it: this instance's (failures.ts), or the one on the queue's Redis. */
export interface FailureList {
  page(q: FailureQuery): FailurePage | Promise<FailurePage>;
  dismiss(id: string): Promise<Failure>;
}

/** Replay, here (replay.ts) or through the queue (queued-replay.ts). */
export type Replays = Pick<Replayer, 'replayFailure' | 'replayRun' | 'replayFailed'>;

const DEFAULT_LIMIT = 200;
const MAX_LIMIT = 1000;
const MAX_HOOK_NAME = 200;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const BULK_FIELDS = new Set(['failed', 'since', 'hook']);

export function failureRoutes(failures: FailureList, replay: Replays): AdminRoute {
  return (call) => {
    const [first, id, verb] = call.parts;
    const n = call.parts.length;
    if (first === 'failures' && n === 1) return answer(call, 'GET', async () => failures.page(listQuery(call.query)));
    if (first === 'failures' && n === 3 && verb === 'dismiss')
      return answer(call, 'POST', async () => ({ ok: true, failure: await failures.dismiss(id!) }));
    if (first === 'failures' && n === 3 && verb === 'replay')
      return answer(call, 'POST', async () => accepted(await replay.replayFailure(id!, again(call.query))));
    if (first === 'runs' && n === 3 && verb === 'replay')
      return answer(call, 'POST', async () => accepted(await replay.replayRun(id!, again(call.query))));
    if (first === 'replay' && n === 1)
      return answer(call, 'POST', async () => {
        const { sinceMs, hook } = bulkBody(await call.body());
        return replay.replayFailed(sinceMs, hook);
      });
    return undefined;
  };
}

function answer(call: AdminCall, method: 'GET' | 'POST', run: () => Promise<unknown>): Promise<unknown> {
  if (call.method !== method) return Promise.reject(refuse.methodNotAllowed(method, `use ${method} here`));
  return run();
}

function accepted(body: unknown): AdminAnswer {
  return new AdminAnswer(202, body);
}

/** One value of a query parameter, or undefined; twice is a 400 naming it. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw refuse.badRequest(`give ${name} at most once`);
  return values[0];
}

function listQuery(query: URLSearchParams): FailureQuery {
  const limitText = single(query, 'limit');
  let limit = DEFAULT_LIMIT;
  if (limitText !== undefined) {
    if (!/^[1-9][0-9]{0,3}$/.test(limitText) || Number(limitText) > MAX_LIMIT)
      throw refuse.badRequest(`limit must be a whole number from 1 to ${MAX_LIMIT}`);
    limit = Number(limitText);
  }
  const beforeText = single(query, 'before');
  if (beforeText !== undefined && !/^[1-9][0-9]{0,15}$/.test(beforeText))
    throw refuse.badRequest('before is not a cursor of this list');
  const state = single(query, 'state') ?? 'open';
  if (state !== 'open' && state !== 'all') throw refuse.badRequest('state must be "open" or "all"');
  const hook = single(query, 'hook');
  if (hook !== undefined) checkHook(hook);
  return {
    limit,
    state,
    ...(beforeText !== undefined ? { before: Number(beforeText) } : {}),
    ...(hook !== undefined ? { hook } : {}),
  };
}

function again(query: URLSearchParams): boolean {
  const value = single(query, 'again');
  if (value === undefined || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw refuse.badRequest('again must be 1 (or true) when given');
}

function checkHook(hook: unknown): asserts hook is string {
  if (typeof hook !== 'string' || hook.trim() === '' || hook.length > MAX_HOOK_NAME)
    throw refuse.badRequest(`hook must be a hook name of 1 to ${MAX_HOOK_NAME} characters`);
}

function bulkBody(body: unknown): { sinceMs: number; hook?: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw refuse.badRequest(
      'the body must be a JSON object: { "failed": true, "since": "<ISO time>", "hook": "<name>" }',
    );
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).find((k) => !BULK_FIELDS.has(k));
  if (unknown !== undefined) throw refuse.badRequest(`unknown field "${unknown.slice(0, 40)}"`);
  if (fields.failed !== true) throw refuse.badRequest('failed must be true: only failures are replayed in bulk');
  let sinceMs = 0;
  if (fields.since !== undefined) {
    const since = fields.since;
    sinceMs = typeof since === 'string' && ISO_TIME.test(since) ? Date.parse(since) : NaN;
    if (!Number.isFinite(sinceMs))
      throw refuse.badRequest('since must be an ISO time with its zone, such as "2026-11-25T18:00:00Z"');
  }
  if (fields.hook === undefined) return { sinceMs };
  checkHook(fields.hook);
  return { sinceMs, hook: fields.hook };
}
