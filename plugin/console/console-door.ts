// The console's door, mounted by each host at its path (the standalone at /ui/, OpenClaw at
// /hookgate/ui/): the page's files, the login with the gateway token, the session cookie, and the
// page's data calls under <mount>api/…, answered by the host's own admin API handlers once the
// session (and, for a change, the anti-forgery token and a same-origin Origin) is checked. The
// admin API itself (/api/…) never accepts the cookie.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HookError, refuse } from '../errors.ts';
import type { Logger } from '../host.ts';
import { writeError, writeJson } from '../http/answers.ts';
import { clientAddress } from '../http/client-address.ts';
import type { TrustedProxies } from '../http/trusted-proxies.ts';
import { tokenMatches, type TokenDigest } from '../auth/token.ts';
import type { ConsoleSettings } from './console-settings.ts';
import { ConsoleSessions, sameSecret, tokenPrint, type ConsoleSession } from './sessions.ts';
import { PageFiles } from './page-files.ts';
import { VERSIONED } from './page-version.ts';
import { overHttps, sameOrigin } from './request-origin.ts';

/** The session cookie's name; its value is the session id, nothing else. */
export const SESSION_COOKIE = 'hookgate_session';
/** The header the page sends the anti-forgery token in (never a URL, never a cookie). */
export const CSRF_HEADER = 'x-hookgate-csrf';
/** A login body is one token: anything larger is refused before it is read whole. */
const MAX_LOGIN_BODY = 4096;
const LOGIN_BODY_TIMEOUT_MS = 10_000;

/** A file under the version: the same bytes at that address for as long as a browser keeps it. */
const KEPT_FOR_GOOD = 'public, max-age=31536000, immutable';

/** Sent with everything under the console's path. */
export const SAFETY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
});

export interface ConsoleDeps {
  /** Where the host mounts it, with both slashes: "/ui/" or "/hookgate/ui/". */
  mount: string;
  settings(): ConsoleSettings;
  /** The owner's token in force now (the gateway token; OpenClaw's in OpenClaw); undefined: none set. */
  ownerToken(): TokenDigest | undefined;
  trustedProxies(): TrustedProxies | undefined;
  /** The lockout the hooks count failures in: a wrong login counts there like a wrong hook token. */
  lockout: { lockedFor(client: string): number; failed(client: string): void };
  /** Answers `rest` (e.g. "failures?limit=5") as the admin API answers /api/<rest>, the caller trusted. */
  api(req: IncomingMessage, res: ServerResponse, rest: string): Promise<void>;
  logger: Logger;
}

/** The session id in the Cookie header, if any. */
function sessionCookie(req: IncomingMessage): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** The login's JSON body `{ token }`, bounded in size and time; anything else is a 400. */
async function loginToken(req: IncomingMessage): Promise<string> {
  if (Number(req.headers['content-length']) > MAX_LOGIN_BODY) throw refuse.payloadTooLarge(MAX_LOGIN_BODY);
  const chunks: Buffer[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(refuse.bodyTimeout(LOGIN_BODY_TIMEOUT_MS)), LOGIN_BODY_TIMEOUT_MS);
  });
  const read = (async () => {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_LOGIN_BODY) throw refuse.payloadTooLarge(MAX_LOGIN_BODY);
      chunks.push(chunk);
    }
  })();
  read.catch(() => {});
  try {
    await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw refuse.badRequest('the login body is not valid JSON: send { "token": "<gateway token>" }');
  }
  const token = (body as { token?: unknown } | null)?.token;
  if (typeof token !== 'string' || token === '')
    throw refuse.badRequest('the login body needs "token": the gateway token');
  return token;
}

export class ConsoleDoor {
  readonly #sessions = new ConsoleSessions();
  readonly #files = new PageFiles();
  /** Each token digest's fingerprint (a reload makes a new digest of the same token: same print). */
  readonly #prints = new WeakMap<TokenDigest, string>();

  constructor(private readonly deps: ConsoleDeps) {}

  /** True when the request was under the console's path (and has been answered). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = req.url ?? '/';
    const pathname = url.split('?', 1)[0]!;
    const { mount } = this.deps;
    if (pathname === mount.slice(0, -1)) {
      if (!this.deps.settings().enabled) return false;
      for (const [name, value] of Object.entries(SAFETY_HEADERS)) res.setHeader(name, value);
      res.writeHead(308, { location: mount, 'content-length': 0 });
      res.end();
      return true;
    }
    if (!pathname.startsWith(mount)) return false;
    for (const [name, value] of Object.entries(SAFETY_HEADERS)) res.setHeader(name, value);
    try {
      if (!this.deps.settings().enabled) throw refuse.notFound('the console is turned off (hooks.console.enabled)');
      await this.#route(req, res, url.slice(mount.length), pathname.slice(mount.length));
    } catch (err) {
      if (!(err instanceof HookError)) this.deps.logger.error('a console request failed', { reason: String(err) });
      writeError(res, err instanceof HookError ? err : refuse.internal());
    }
    return true;
  }

  async #route(req: IncomingMessage, res: ServerResponse, rest: string, path: string): Promise<void> {
    const method = req.method ?? 'GET';
    if (path === 'login') {
      if (method !== 'POST') throw refuse.methodNotAllowed('POST', 'log in with POST');
      return this.#login(req, res);
    }
    if (path === 'logout') {
      if (method !== 'POST') throw refuse.methodNotAllowed('POST', 'log out with POST');
      const session = this.#changing(req);
      this.#sessions.end(session.id);
      this.deps.logger.info('console logout', { client: this.#client(req) });
      writeJson(res, 200, { ok: true }, { 'set-cookie': this.#cookie(req, '', 0), 'cache-control': 'no-store' });
      return;
    }
    if (path === 'api' || path.startsWith('api/')) {
      const session = method === 'GET' || method === 'HEAD' ? this.#session(req) : this.#changing(req);
      res.setHeader('cache-control', 'no-store');
      if (path === 'api/session') {
        if (method !== 'GET') throw refuse.methodNotAllowed('GET', 'the session is read with GET');
        writeJson(res, 200, { ok: true, csrf: session.csrf, expiresAt: new Date(session.expiresAt).toISOString() });
        return;
      }
      return this.deps.api(req, res, rest.slice('api/'.length));
    }
    if (method !== 'GET' && method !== 'HEAD')
      throw refuse.methodNotAllowed('GET', "the console's files are read with GET");
    // The page itself for a session, the login form without one: both are static, neither holds a secret.
    const name = path === '' ? (this.#live(req) ? 'index.html' : 'login.html') : path;
    const versioned = name.startsWith(VERSIONED);
    const file = versioned ? await this.#files.readVersioned(name) : await this.#files.read(name);
    if (file === undefined) throw refuse.notFound('no such console file');
    res.writeHead(200, {
      'content-type': file.type,
      'content-length': file.body.length,
      // A versioned address always holds the same bytes; the pages name the current one each time.
      'cache-control': versioned ? KEPT_FOR_GOOD : name.endsWith('.html') ? 'no-store' : 'no-cache',
    });
    res.end(method === 'HEAD' ? undefined : file.body);
  }

  /** POST <mount>login { token }: the gateway token opens a session; a wrong one counts toward the lockout. */
  async #login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const client = this.#client(req);
    const locked = this.deps.lockout.lockedFor(client);
    if (locked > 0) throw refuse.rateLimited(locked);
    // A login from another site would log the browser into the attacker's choice of session.
    if (!sameOrigin(req, this.deps.trustedProxies()))
      throw refuse.forbidden('the login must come from the console page itself');
    const token = await loginToken(req);
    const current = this.#current();
    if (current === undefined || !tokenMatches(token, current.digest)) {
      this.deps.lockout.failed(client);
      throw refuse.unauthorized('wrong gateway token');
    }
    const lifetimeMs = this.deps.settings().sessionHours * 3_600_000;
    this.#sessions.follow(current.print);
    const session = this.#sessions.open(lifetimeMs);
    this.deps.logger.info('console login', { client });
    writeJson(
      res,
      200,
      { ok: true, expiresAt: new Date(session.expiresAt).toISOString() },
      { 'set-cookie': this.#cookie(req, session.id, Math.floor(lifetimeMs / 1000)), 'cache-control': 'no-store' },
    );
  }

  /** The request's live session, or a 401. */
  #session(req: IncomingMessage): ConsoleSession {
    const session = this.#live(req);
    if (session === undefined) throw refuse.unauthorized('log in to the console first (no session, or it ended)');
    return session;
  }

  /** A session allowed to change something: its anti-forgery token in the header, and our own Origin. */
  #changing(req: IncomingMessage): ConsoleSession {
    const session = this.#session(req);
    const sent = req.headers[CSRF_HEADER];
    if (typeof sent !== 'string' || !sameSecret(sent, session.csrf))
      throw refuse.forbidden(`a change needs the session's anti-forgery token in the ${CSRF_HEADER} header`);
    if (!sameOrigin(req, this.deps.trustedProxies()))
      throw refuse.forbidden('a change must come from the console page itself');
    return session;
  }

  #live(req: IncomingMessage): ConsoleSession | undefined {
    const current = this.#current();
    // No token in force, or another one than the sessions were opened with: nobody stays logged in.
    this.#sessions.follow(current?.print ?? '');
    if (current === undefined) return undefined;
    return this.#sessions.find(sessionCookie(req));
  }

  #current(): { print: string; digest: TokenDigest } | undefined {
    const digest = this.deps.ownerToken();
    if (digest === undefined) return undefined;
    let print = this.#prints.get(digest);
    if (print === undefined) this.#prints.set(digest, (print = tokenPrint(digest)));
    return { print, digest };
  }

  #client(req: IncomingMessage): string {
    return clientAddress(req, this.deps.trustedProxies());
  }

  #cookie(req: IncomingMessage, value: string, maxAgeSeconds: number): string {
    const secure = overHttps(req, this.deps.trustedProxies()) ? '; Secure' : '';
    return `${SESSION_COOKIE}=${value}; Path=${this.deps.mount}; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
  }
}
