// `hookgate requests`: the gateway's request log (GET /api/requests) as a table, filtered by the
// gateway (hook, outcome, code, client, time range), paged with --before, and here by status and
// path; --follow keeps polling and prints each new request as it comes.
import { parseArgs } from 'node:util';
import { REQUESTS_PAGE_MAX, type RequestEntry } from '../../../../host-kit.ts';
import { localUrl } from '../../server/settings.ts';
import { UsageError } from '../support/cli-common.ts';
import { loadContext } from '../support/context.ts';
import { formatTable, type Column } from '../../../../util/table.ts';
import { asRun } from '../support/command-name.ts';
import { GATEWAY_OPTIONS, GATEWAY_OPTIONS_HELP } from '../support/admin-client.ts';

export const REQUESTS_HELP = `Usage: hookgate requests [--follow] [--hook NAME] [--outcome 4xx] [--code CODE] [--client ADDR] [--since T] [--until T] [--before CURSOR] [--status 4xx] [--path github] [--limit N] [--config FILE] [--url URL]

Shows the gateway's request log (kept on disk, hooks.requestLog), the newest first in pages, each page
oldest first: time, status, error code, milliseconds, body bytes, path, mapping, client, idempotency
key, duplicate, held (its hook was paused), request id. Never payloads, tokens or signatures. Reads the
gateway's address and token from the config. When older requests match, the last line gives the
--before that shows them.

Options:
  --hook NAME      Only this hook: wake, agent or a mapping id.
  --outcome O      Only this outcome: 2xx, 4xx, 5xx, duplicate, held or ignored.
  --code CODE      Only requests refused with this code (e.g. unauthorized).
  --client ADDR    Only requests from this client address.
  --since T        Only requests at or after T (an ISO 8601 time).
  --until T        Only requests before T.
  --before CURSOR  The page before this cursor (as a page's last line gives it).
  --status S       Only this status (404) or class (4xx), of the page read.
  --path TEXT      Only paths containing TEXT, of the page read.
  --limit N        Show at most N requests (1..${REQUESTS_PAGE_MAX}, default 50).
  --follow, -f   Keep going: print each new request as it arrives (Ctrl-C stops).
${GATEWAY_OPTIONS_HELP}`;

/** How often --follow asks the gateway. */
const FOLLOW_INTERVAL_MS = 500;

const COLUMNS: readonly Column<RequestEntry>[] = [
  { header: 'TIME', cell: (r) => r.at.slice(11, 23), min: 12 },
  { header: 'STATUS', cell: (r) => r.status, right: true },
  { header: 'CODE', cell: (r) => r.code, min: 16 },
  { header: 'MS', cell: (r) => r.ms.toFixed(1), right: true, min: 7 },
  { header: 'BYTES', cell: (r) => r.bytes, right: true, min: 7 },
  { header: 'PATH', cell: (r) => r.path, max: 40, min: 16 },
  { header: 'MAPPING', cell: (r) => r.mapping, max: 24, min: 8 },
  { header: 'CLIENT', cell: (r) => r.client, max: 39, min: 15 },
  { header: 'KEY', cell: (r) => r.idempotencyKey, max: 24, min: 8 },
  { header: 'DUP', cell: (r) => (r.duplicate ? 'dup' : '') },
  { header: 'HELD', cell: (r) => (r.held ? 'held' : '') },
  { header: 'REQUEST ID', cell: (r) => r.requestId },
];

interface Filter {
  status?: string;
  path?: string;
}

function matches(entry: RequestEntry, { status, path }: Filter): boolean {
  if (status !== undefined) {
    const s = String(entry.status);
    if (status.endsWith('xx') ? s[0] !== status[0] : s !== status) return false;
  }
  return path === undefined || entry.path.includes(path);
}

export async function runRequests(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      follow: { type: 'boolean', short: 'f' },
      status: { type: 'string' },
      path: { type: 'string' },
      limit: { type: 'string' },
      hook: { type: 'string' },
      outcome: { type: 'string' },
      code: { type: 'string' },
      client: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      before: { type: 'string' },
      ...GATEWAY_OPTIONS,
    },
    strict: true,
  });
  if (values.help) {
    console.log(asRun(REQUESTS_HELP));
    return 0;
  }
  if (values.status !== undefined && !/^[1-5]([0-9]{2}|xx)$/.test(values.status))
    throw new UsageError(`--status must be a status (404) or a class (4xx), not "${values.status}"`);
  let limit = 50;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > REQUESTS_PAGE_MAX)
      throw new UsageError(`--limit must be 1..${REQUESTS_PAGE_MAX}, not "${values.limit}"`);
  }
  const { settings } = await loadContext(values);
  const base = (values.url ?? localUrl(settings.bind, settings.port)).replace(/\/+$/, '');
  const filter: Filter = { status: values.status, path: values.path };
  // The gateway's own filters: it checks them, and a wrong one is its 400 naming it.
  const query = new URLSearchParams();
  for (const name of ['hook', 'outcome', 'code', 'client', 'since', 'until'] as const) {
    if (values[name] !== undefined) query.set(name, values[name]);
  }
  const page = async (before?: string): Promise<{ requests: RequestEntry[]; before?: string }> => {
    const q = new URLSearchParams(query);
    // Filtered here too: the gateway's page is as large as it gives, then cut to --limit.
    q.set('limit', String(filter.status || filter.path ? REQUESTS_PAGE_MAX : limit));
    if (before !== undefined) q.set('before', before);
    const got = await fetchRequests(base, settings.gatewayToken, q);
    return { ...got, requests: got.requests.filter((e) => matches(e, filter)) };
  };
  const read = async (): Promise<RequestEntry[]> => (await page()).requests;

  const firstPage = await page(values.before);
  const first = firstPage.requests.slice(-limit);
  console.log(first.length || values.follow ? formatTable(COLUMNS, first) : 'No hook requests yet.');
  if (firstPage.before !== undefined && !values.follow) console.log(`older: --before ${firstPage.before}`);
  if (!values.follow) return 0;
  const seen = new Set(first.map((e) => e.requestId));
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_INTERVAL_MS));
    const entries = await read();
    const fresh = entries.filter((e) => !seen.has(e.requestId));
    // Only ids still in the gateway's ring can come again: the set stays as small as the ring.
    seen.clear();
    for (const e of entries) seen.add(e.requestId);
    if (fresh.length) console.log(formatTable(COLUMNS, fresh, { header: false }));
  }
}

async function fetchRequests(
  base: string,
  token: string,
  query: URLSearchParams,
): Promise<{ requests: RequestEntry[]; before?: string }> {
  let res: Response;
  try {
    res = await fetch(`${base}/api/requests?${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
  } catch {
    throw new Error(`cannot reach the gateway at ${base} (is it running? --url sets the address)`);
  }
  const body = (await res.json().catch(() => undefined)) as
    { requests?: RequestEntry[]; before?: string; code?: string; error?: string } | undefined;
  if (res.status !== 200 || !Array.isArray(body?.requests)) {
    const why = body?.error ? `: ${body.error}` : '';
    throw new Error(`the gateway at ${base} answered ${res.status}${body?.code ? ` ${body.code}` : ''}${why}`);
  }
  return body.before === undefined ? { requests: body.requests } : { requests: body.requests, before: body.before };
}
