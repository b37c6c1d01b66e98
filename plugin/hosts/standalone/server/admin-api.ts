// Admin API of the standalone gateway, on the same port: read-only views of sessions, runs and the
// outbox, behind the gateway token (never the hook token).
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AuthFailureLimiter,
  clientAddress,
  digestToken,
  extractToken,
  tokenMatches,
  type TokenDigest,
  type TrustedProxies,
} from '../../../kits/node-http.ts';
import { DEFAULTS } from '../../../kits/config.ts';
import { HookError, refuse, writeError, type HookMetrics } from '../../../host-kit.ts';
import { adminCallOf, writeAdminAnswer, type AdminCall } from '../../../kits/admin.ts';
import { BadCursorError, type SessionStore, type Outbox, type RunRegistry } from '../storage/index.ts';

export interface AdminDeps {
  gatewayToken: () => string;
  /** gateway.trustedProxies as in force: behind a proxy, lockouts apply to the real client. */
  trustedProxies: () => TrustedProxies | undefined;
  store: SessionStore;
  outbox: Outbox;
  runs: RunRegistry;
  /** The Gmail watcher's state (this process's, or a `webhooks gmail run`'s); undefined: none. */
  gmail?: () => Promise<unknown>;
  /** The hooks plugin's metrics (GET /metrics), and whether they are shown without the gateway token. */
  metrics: HookMetrics;
  metricsPublic: () => boolean;
  /** What the core's run book adds to a run's view: its hook, the request that started it, its delivery. */
  runSummary: (runId: string) => { hook: string; requestId?: string; delivery?: unknown } | undefined;
  /** With the queue on Redis (hooks.queue): a run this gateway does not know, as Redis has it. */
  sharedRun?: (runId: string) => Promise<unknown>;
  /** The core's routes (failures, replay, pause, the request log), asked before the gateway's own read-only ones. */
  core: (call: AdminCall) => Promise<unknown> | undefined;
}

const PREFIX = '/api/';
const METRICS_PATH = '/metrics';
/** Entries per page of history or outbox when the request names no limit, and at most. */
export const DEFAULT_PAGE_LIMIT = 200;
export const MAX_PAGE_LIMIT = 1000;

interface PageQuery {
  limit: number;
  before?: string;
}

/** ?limit=N (1..1000, default 200) and ?before=<cursor>; anything else wrong is a 400. */
function pageQuery(url: string): PageQuery {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const limits = params.getAll('limit');
  const befores = params.getAll('before');
  if (limits.length > 1 || befores.length > 1) throw refuse.badRequest('give limit and before at most once each');
  let limit = DEFAULT_PAGE_LIMIT;
  if (limits.length === 1) {
    const text = limits[0]!;
    if (!/^[1-9][0-9]{0,6}$/.test(text) || Number(text) > MAX_PAGE_LIMIT) {
      throw refuse.badRequest(`limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
    }
    limit = Number(text);
  }
  const before = befores[0];
  if (before !== undefined && (before === '' || before.length > 200))
    throw refuse.badRequest('before is not a valid cursor');
  return before === undefined ? { limit } : { limit, before };
}

/** A cursor the store refuses is the client's mistake. */
async function paged<R>(read: () => Promise<R>): Promise<R> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof BadCursorError) throw refuse.badRequest('before is not a cursor of this list');
    throw err;
  }
}

/** The run book's facts a run's own view adds (this process's runs only). */
function bookFields(
  summary: { hook: string; requestId?: string; delivery?: unknown } | undefined,
): Record<string, unknown> {
  if (!summary) return {};
  const out: Record<string, unknown> = { hook: summary.hook };
  if (summary.requestId !== undefined) out.requestId = summary.requestId;
  if (summary.delivery !== undefined) out.delivery = summary.delivery;
  return out;
}

export class AdminApi {
  private readonly limiter = new AuthFailureLimiter();
  private digest: { token: string; digest: TokenDigest } | undefined;

  constructor(private readonly deps: AdminDeps) {}

  /** True when the request was for the admin API (and has been answered). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = req.url ?? '/';
    if (url.split('?', 1)[0] === METRICS_PATH) {
      await this.answer(res, () => this.metrics(req, res));
      return true;
    }
    if (!url.startsWith(PREFIX)) return false;
    await this.answer(res, async () => writeAdminAnswer(res, await this.route(req, url)));
    return true;
  }

  /**
   * The console's data calls (/ui/api/<rest>): the same handlers as /api/<rest>, the caller already
   * let in by the console's session, so no bearer token is asked for.
   */
  async handleForConsole(req: IncomingMessage, res: ServerResponse, rest: string): Promise<void> {
    await this.answer(res, async () => writeAdminAnswer(res, await this.routed(req, PREFIX + rest)));
  }

  private async answer(res: ServerResponse, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      writeError(res, err instanceof HookError ? err : refuse.internal());
    }
  }

  /** The Prometheus exposition: the gateway token, unless gateway.metrics.public. */
  private async metrics(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET') throw refuse.methodNotAllowed('GET', 'metrics are read with GET');
    if (!this.deps.metricsPublic()) this.authorize(req);
    const { contentType, text } = await this.deps.metrics.exposition();
    res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
    res.end(text);
  }

  /** The gateway token, with the admin API's own lockout of addresses that keep guessing. */
  private authorize(req: IncomingMessage): void {
    const client = clientAddress(req, this.deps.trustedProxies());
    const locked = this.limiter.lockedFor(client);
    if (locked > 0) {
      throw refuse.rateLimited(locked);
    }
    const token = extractToken(req.headers);
    if (!tokenMatches(token, this.tokenDigest())) {
      this.limiter.recordFailure(client, DEFAULTS.authRateLimit);
      throw refuse.unauthorized('missing or wrong gateway token');
    }
  }

  private async route(req: IncomingMessage, url: string): Promise<unknown> {
    this.authorize(req);
    return this.routed(req, url);
  }

  /** The answer for an admin URL (`/api/…`), its caller already authenticated. */
  private async routed(req: IncomingMessage, url: string): Promise<unknown> {
    const pathname = url.split('?', 1)[0]!;
    const parts = pathname.slice(PREFIX.length).split('/');
    const call = adminCallOf(req, url.slice(PREFIX.length));
    const core = this.deps.core(call);
    if (core !== undefined) return core;
    if (req.method !== 'GET') throw refuse.methodNotAllowed('GET', 'this admin endpoint is read-only: use GET');
    const { store, outbox, runs } = this.deps;
    if (parts.length === 1 && parts[0] === 'sessions') return { sessions: store.list() };
    if (parts.length === 3 && parts[0] === 'sessions' && parts[2] === 'history') {
      const key = call.parts[1]!;
      const { limit, before } = pageQuery(url);
      return paged(() => store.historyPage(key, limit, before));
    }
    if (parts.length === 2 && parts[0] === 'runs') {
      const run = await runs.find(call.parts[1]!);
      if (!run) {
        // Run elsewhere (hooks.queue): its state as its taker wrote it on Redis.
        const shared = await this.deps.sharedRun?.(call.parts[1]!);
        if (shared) return shared;
        throw refuse.notFound('no such run');
      }
      const { name: _name, ...view } = run;
      const base = { ...view, ...bookFields(this.deps.runSummary(run.runId)) };
      // The reply's deliveries: a fallback chain shows each channel tried, in order.
      const deliveries = await outbox.deliveriesOf(run.runId);
      return deliveries.length ? { ...base, deliveries } : base;
    }
    if (parts.length === 1 && parts[0] === 'outbox') {
      const { limit, before } = pageQuery(url);
      return paged(() => outbox.page(limit, before));
    }
    if (parts.length === 1 && parts[0] === 'gmail') {
      const state = await this.deps.gmail?.();
      if (state === undefined)
        throw refuse.notFound('no Gmail watcher state: hooks.gmail.account is not set, or its watcher has not run yet');
      return state;
    }
    throw refuse.notFound('no such admin endpoint');
  }

  private tokenDigest(): TokenDigest {
    const token = this.deps.gatewayToken();
    if (this.digest?.token !== token) this.digest = { token, digest: digestToken(token) };
    return this.digest.digest;
  }
}
