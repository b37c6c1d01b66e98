// Admin API of the standalone gateway, on the same port: read-only views of sessions, runs and the
// outbox, behind the gateway token (never the hook token).
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AuthFailureLimiter,
  clientAddress,
  DEFAULTS,
  digestToken,
  extractToken,
  HookError,
  refuse,
  tokenMatches,
  writeError,
  writeJson,
  type TokenDigest,
} from '../../host-kit.ts';
import type { SessionStore } from './session-store.ts';
import type { Outbox } from './outbox.ts';
import type { RunRegistry } from './run-registry.ts';

export interface AdminDeps {
  gatewayToken: () => string;
  store: SessionStore;
  outbox: Outbox;
  runs: RunRegistry;
}

const PREFIX = '/api/';

export class AdminApi {
  private readonly limiter = new AuthFailureLimiter();
  private digest: { token: string; digest: TokenDigest } | undefined;

  constructor(private readonly deps: AdminDeps) {}

  /** True when the request was for the admin API (and has been answered). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = req.url ?? '/';
    if (!url.startsWith(PREFIX)) return false;
    try {
      writeJson(res, 200, await this.route(req, url));
    } catch (err) {
      writeError(res, err instanceof HookError ? err : refuse.internal());
    }
    return true;
  }

  private async route(req: IncomingMessage, url: string): Promise<unknown> {
    if (req.method !== 'GET') throw refuse.methodNotAllowed('GET', 'the admin API is read-only: use GET');
    const client = clientAddress(req, undefined);
    const locked = this.limiter.lockedFor(client);
    if (locked > 0) {
      throw refuse.rateLimited(locked);
    }
    const token = extractToken(req.headers);
    if (!tokenMatches(token, this.tokenDigest())) {
      this.limiter.recordFailure(client, DEFAULTS.authRateLimit, token ?? null);
      throw refuse.unauthorized('missing or wrong gateway token');
    }
    const pathname = url.split('?', 1)[0]!;
    const parts = pathname.slice(PREFIX.length).split('/');
    const { store, outbox, runs } = this.deps;
    if (parts.length === 1 && parts[0] === 'sessions') return { sessions: store.list() };
    if (parts.length === 3 && parts[0] === 'sessions' && parts[2] === 'history') {
      return { entries: await store.history(decode(parts[1]!)) };
    }
    if (parts.length === 2 && parts[0] === 'runs') {
      const run = runs.get(decode(parts[1]!));
      if (!run) throw refuse.notFound('no such run');
      const { name: _name, ...view } = run;
      return view;
    }
    if (parts.length === 1 && parts[0] === 'outbox') return { deliveries: outbox.list() };
    throw refuse.notFound('no such admin endpoint');
  }

  private tokenDigest(): TokenDigest {
    const token = this.deps.gatewayToken();
    if (this.digest?.token !== token) this.digest = { token, digest: digestToken(token) };
    return this.digest.digest;
  }
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw refuse.badRequest('the path is not valid percent-encoding');
  }
}
