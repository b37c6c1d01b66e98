// The request log's admin routes, the same for every host: `GET requests` (filtered, paged with
// `before`), `GET requests/live` (new entries as server-sent events while the client stays) and
// `GET requests/<id>`. A query is checked whole before anything is read: a bad value is a 400 naming
// the parameter. The filters read the log's index in memory; only a page's entries come off the disk.
import { refuse } from '../errors.ts';
import { OUTCOMES, REQUESTS_PAGE_MAX, type Outcome } from '../request-log/entry.ts';
import { liveMatches, type RequestFilter, type RequestLog } from '../request-log/request-log.ts';
import { AdminStream, JsonText, type AdminCall, type AdminRoute } from './admin-call.ts';

/** Requests a page holds when the caller names no limit. */
export const DEFAULT_REQUESTS_LIMIT = 100;
/** The filters and paging a query may name; anything else is refused, so a typo is not ignored. */
const PARAMETERS = new Set(['limit', 'before', 'hook', 'outcome', 'code', 'client', 'since', 'until']);

export interface RequestsQuery extends RequestFilter {
  limit: number;
  /** The cursor of an earlier page: entries older than it. */
  before?: number;
}

/** One value of a parameter given at most once. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw refuse.badRequest(`give ${name} at most once`);
  return values[0];
}

function time(query: URLSearchParams, name: string): number | undefined {
  const text = single(query, name);
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  if (text.length > 40 || !Number.isFinite(ms)) throw refuse.badRequest(`${name} must be an ISO 8601 time`);
  return ms;
}

function text(query: URLSearchParams, name: string): string | undefined {
  const value = single(query, name);
  if (value !== undefined && (value === '' || value.length > 200))
    throw refuse.badRequest(`${name} must be 1 to 200 characters`);
  return value;
}

/** The filters and paging of a query (`GET /api/requests?…`); a 400 naming the parameter when wrong. */
export function requestsQueryOf(query: URLSearchParams): RequestsQuery {
  for (const name of query.keys()) {
    if (!PARAMETERS.has(name)) throw refuse.badRequest(`unknown parameter ${JSON.stringify(name.slice(0, 40))}`);
  }
  const limitText = single(query, 'limit');
  let limit = DEFAULT_REQUESTS_LIMIT;
  if (limitText !== undefined) {
    if (!/^[1-9][0-9]{0,3}$/.test(limitText) || Number(limitText) > REQUESTS_PAGE_MAX)
      throw refuse.badRequest(`limit must be a whole number from 1 to ${REQUESTS_PAGE_MAX}, given once`);
    limit = Number(limitText);
  }
  const out: RequestsQuery = { limit };
  const before = single(query, 'before');
  if (before !== undefined) {
    if (!/^[1-9][0-9]{0,14}$/.test(before)) throw refuse.badRequest('before is not a cursor of this list');
    out.before = Number(before);
  }
  const outcome = single(query, 'outcome');
  if (outcome !== undefined) {
    if (!(OUTCOMES as readonly string[]).includes(outcome))
      throw refuse.badRequest(`outcome must be one of ${OUTCOMES.join(', ')}`);
    out.outcome = outcome as Outcome;
  }
  const hook = text(query, 'hook');
  if (hook !== undefined) out.hook = hook;
  const code = text(query, 'code');
  if (code !== undefined) out.code = code;
  const client = text(query, 'client');
  if (client !== undefined) out.client = client;
  const sinceMs = time(query, 'since');
  if (sinceMs !== undefined) out.sinceMs = sinceMs;
  const untilMs = time(query, 'until');
  if (untilMs !== undefined) out.untilMs = untilMs;
  return out;
}

export function requestsRoute(log: RequestLog): AdminRoute {
  return (call: AdminCall) => {
    const { parts, method } = call;
    if (parts[0] !== 'requests' || parts.length > 2) return undefined;
    if (method !== 'GET') return Promise.reject(refuse.methodNotAllowed('GET', 'the request log is read with GET'));
    if (parts.length === 1) {
      return (async () => {
        const { limit, before, ...filter } = requestsQueryOf(call.query);
        return log.page(filter, limit, before);
      })();
    }
    if (parts[1] === 'live') return Promise.resolve().then(() => liveTail(log, requestsQueryOf(call.query)));
    const id = parts[1]!;
    return log.find(id).then((request) => {
      if (!request) throw refuse.notFound(`no request ${JSON.stringify(id.slice(0, 80))} in the request log`);
      return { request };
    });
  };
}

/** New entries that pass the filter, as they are added, while the client stays. */
function liveTail(log: RequestLog, { limit: _limit, before: _before, ...filter }: RequestsQuery): AdminStream {
  return new AdminStream((send) =>
    log.subscribe((live) => {
      // Serialized only if sent (a flood's tail skips most), from the text of its disk line.
      if (liveMatches(live.logged, filter)) send('request', new JsonText(() => live.json));
    }),
  );
}
