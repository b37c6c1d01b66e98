// A fake Google on one loopback HTTP server, for HOOKGATE_GOOGLE_API_ROOT: the OAuth token endpoint
// (refresh-token grant), the signing keys (/oauth2/v3/certs) with a way to sign and rotate, Pub/Sub
// pull/acknowledge, and Gmail watch/stop/history/messages over in-memory mailboxes. Its state is
// public for tests to inspect and script; other route groups (OAuth consent, Pub/Sub admin) register
// on the same server with route(). Every request is recorded (method, path, query; no bodies kept
// beyond what a test reads).
import { createSign, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  /** The bearer token of the Authorization header, if any. */
  bearer: string | undefined;
  /** The parsed body: JSON, or a form as an object; {} when empty. */
  body: any;
  at: number;
}

export interface FakeAnswer {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** `match` is the route pattern's match against the path (named groups in match.groups). */
export type FakeHandler = (req: FakeRequest, match: RegExpExecArray) => FakeAnswer | Promise<FakeAnswer>;

interface Route {
  method: string;
  pattern: RegExp;
  handler: FakeHandler;
}

interface ScriptedFailure {
  method: string;
  pattern: RegExp;
  answer: FakeAnswer;
  times: number;
}

// ---------------------------------------------------------------- OAuth

export interface FakeOAuthClient {
  clientId: string;
  clientSecret: string;
}

export interface FakeGrant {
  account: string;
  clientId: string;
  revoked: boolean;
  scopes: string[];
}

interface IssuedToken {
  account: string;
  expiresAt: number;
}

// ---------------------------------------------------------------- Gmail

/** How a message's body is laid out, to exercise every path of the parser. */
export type FakeMessageFormat = 'plain' | 'alternative' | 'html' | 'nested';

export interface FakeMessageSpec {
  from?: string;
  subject?: string;
  snippet?: string;
  /** The plain text (plain, alternative, nested). */
  text?: string;
  /** The HTML (html, alternative, nested); default derived from text. */
  html?: string;
  format?: FakeMessageFormat;
  labels?: string[];
}

export interface FakeMessage {
  id: string;
  threadId: string;
  labelIds: string[];
  snippet: string;
  historyId: string;
  internalDate: string;
  payload: any;
}

export interface FakeMailbox {
  account: string;
  historyId: number;
  /** history.list with a startHistoryId below this answers 404 (Gmail keeps about a week). */
  historyFloor: number;
  history: { id: number; messageId: string }[];
  messages: Map<string, FakeMessage>;
  watches: { topicName: string; labelIds: string[]; at: number }[];
  stops: number;
}

// ---------------------------------------------------------------- Pub/Sub

export interface FakePubSubMessage {
  messageId: string;
  data: string;
  publishTime: string;
  /** Times it was handed out by pull. */
  deliveries: number;
  /** Set while handed out and not acknowledged: when it becomes pullable again. */
  leaseUntil: number;
  ackId: string | undefined;
  acked: boolean;
}

export interface FakeSubscription {
  name: string;
  topic: string;
  ackDeadlineSeconds: number;
  pushConfig?: unknown;
  messages: FakePubSubMessage[];
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  jwk: Record<string, unknown>;
}

export function base64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

function makeKey(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomBytes(8).toString('hex');
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

export class FakeGoogle {
  readonly server: Server;
  /** The origin to put in HOOKGATE_GOOGLE_API_ROOT. */
  url = '';
  readonly requests: FakeRequest[] = [];
  readonly #routes: Route[] = [];
  readonly #failures: ScriptedFailure[] = [];

  // OAuth state
  readonly clients = new Map<string, FakeOAuthClient>();
  readonly grants = new Map<string, FakeGrant>();
  readonly accessTokens = new Map<string, IssuedToken>();
  /** Lifetime of the access tokens the token endpoint issues. */
  tokenLifetimeSeconds = 3600;
  /** The token endpoint's authorization-code grant, when setup's routes are registered. */
  authorizationCodeGrant: ((req: FakeRequest) => FakeAnswer) | undefined;

  // Signing keys: `keys` are published; the first one signs by default.
  keys: SigningKey[] = [makeKey()];
  certsMaxAgeSeconds = 3600;

  // Gmail
  readonly mailboxes = new Map<string, FakeMailbox>();
  /** Entries per history.list page (Gmail's default is 100; tests make it small to force paging). */
  historyPageSize = 100;
  #nextMessage = 1;

  // Pub/Sub
  readonly subscriptions = new Map<string, FakeSubscription>();
  /** How long a pull with nothing to hand out waits for a publish. */
  pullHoldMs = 500;
  readonly #pullWaiters = new Set<() => void>();

  private constructor() {
    this.server = createServer((req, res) => void this.#serve(req, res));
    this.#registerOAuth();
    this.#registerPubSub();
    this.#registerGmail();
  }

  static async start(): Promise<FakeGoogle> {
    const fake = new FakeGoogle();
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  async close(): Promise<void> {
    for (const wake of this.#pullWaiters) wake();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Adds a route; later routes are tried after earlier ones. */
  route(method: string, pattern: RegExp, handler: FakeHandler): void {
    this.#routes.push({ method, pattern, handler });
  }

  /** The next `times` requests matching method and path get `answer` instead of the real handling. */
  failNext(method: string, pattern: RegExp, answer: FakeAnswer, times = 1): void {
    this.#failures.push({ method, pattern, answer, times });
  }

  /** A Google-shaped error answer. */
  static error(status: number, googleStatus: string, message: string, reason?: string): FakeAnswer {
    return {
      status,
      body: {
        error: {
          code: status,
          status: googleStatus,
          message,
          ...(reason ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason }] } : {}),
        },
      },
    };
  }

  /** Requests whose path matches, in order. */
  calls(method: string, pattern: RegExp): FakeRequest[] {
    return this.requests.filter((r) => r.method === method && pattern.test(r.path));
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    let body: any = {};
    if (raw) {
      if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
        body = Object.fromEntries(new URLSearchParams(raw));
      } else {
        try {
          body = JSON.parse(raw);
        } catch {
          body = { unparsed: raw };
        }
      }
    }
    const auth = req.headers.authorization;
    const request: FakeRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      bearer: auth?.startsWith('Bearer ') ? auth.slice(7) : undefined,
      body,
      at: Date.now(),
    };
    this.requests.push(request);
    let answer: FakeAnswer;
    try {
      answer = await this.#answer(request);
    } catch (err) {
      answer = FakeGoogle.error(500, 'INTERNAL', `fake google: ${(err as Error).message}`);
    }
    if (res.destroyed) return;
    res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
    res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
  }

  async #answer(req: FakeRequest): Promise<FakeAnswer> {
    const failure = this.#failures.find((f) => f.times > 0 && f.method === req.method && f.pattern.test(req.path));
    if (failure) {
      failure.times--;
      return failure.answer;
    }
    for (const route of this.#routes) {
      if (route.method !== req.method) continue;
      const match = route.pattern.exec(req.path);
      if (match) return route.handler(req, match);
    }
    return FakeGoogle.error(404, 'NOT_FOUND', `fake google has no route for ${req.method} ${req.path}`);
  }

  // ------------------------------------------------------------ OAuth

  /** Registers an OAuth client and a refresh token for `account`; returns the stored-credentials shape. */
  addAccount(
    account: string,
    scopes: string[] = ['https://www.googleapis.com/auth/gmail.readonly', 'https://www.googleapis.com/auth/pubsub'],
  ): { client_id: string; client_secret: string; refresh_token: string } {
    const client: FakeOAuthClient = {
      clientId: `${randomBytes(6).toString('hex')}.apps.googleusercontent.com`,
      clientSecret: `GOCSPX-${randomBytes(12).toString('hex')}`,
    };
    this.clients.set(client.clientId, client);
    const refreshToken = `1//fake-refresh-${randomBytes(16).toString('hex')}`;
    this.grants.set(refreshToken, { account, clientId: client.clientId, revoked: false, scopes });
    this.mailbox(account);
    return { client_id: client.clientId, client_secret: client.clientSecret, refresh_token: refreshToken };
  }

  /** Issues an access token for `account` (what the token endpoint does; also for setup's code grant). */
  issueAccessToken(account: string): { access_token: string; expires_in: number; token_type: string } {
    const token = `ya29.fake-${randomBytes(16).toString('hex')}`;
    this.accessTokens.set(token, { account, expiresAt: Date.now() + this.tokenLifetimeSeconds * 1000 });
    return { access_token: token, expires_in: this.tokenLifetimeSeconds, token_type: 'Bearer' };
  }

  /** Every access token issued so far stops working (as if they all expired). */
  expireAccessTokens(): void {
    for (const t of this.accessTokens.values()) t.expiresAt = 0;
  }

  /** The user revoked access (or a testing-mode app's 7 days passed): refreshes fail with invalid_grant. */
  revokeGrants(account?: string): void {
    for (const g of this.grants.values()) if (account === undefined || g.account === account) g.revoked = true;
    for (const [token, t] of this.accessTokens)
      if (account === undefined || t.account === account) this.accessTokens.delete(token);
  }

  /** The account a request's bearer token belongs to, or undefined (expired or unknown). */
  accountOf(req: FakeRequest): string | undefined {
    const t = req.bearer === undefined ? undefined : this.accessTokens.get(req.bearer);
    if (!t || t.expiresAt <= Date.now()) return undefined;
    return t.account;
  }

  static unauthenticated(): FakeAnswer {
    return FakeGoogle.error(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.');
  }

  #registerOAuth(): void {
    this.route('POST', /^\/token$/, (req) => {
      const b = req.body as Record<string, string>;
      if (b.grant_type === 'authorization_code' && this.authorizationCodeGrant) return this.authorizationCodeGrant(req);
      if (b.grant_type !== 'refresh_token') {
        return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' } };
      }
      const client = this.clients.get(b.client_id ?? '');
      if (!client || client.clientSecret !== b.client_secret) {
        return { status: 401, body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' } };
      }
      const grant = this.grants.get(b.refresh_token ?? '');
      if (!grant || grant.revoked || grant.clientId !== client.clientId) {
        return {
          status: 400,
          body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' },
        };
      }
      return { body: { ...this.issueAccessToken(grant.account), scope: grant.scopes.join(' ') } };
    });
    this.route('GET', /^\/oauth2\/v3\/certs$/, () => ({
      body: { keys: this.keys.map((k) => k.jwk) },
      headers: { 'cache-control': `public, max-age=${this.certsMaxAgeSeconds}` },
    }));
  }

  // ------------------------------------------------------------ signing keys

  /** A new key becomes the signing key and is published; the old ones stay published unless dropOld. */
  rotateKeys(dropOld = false): SigningKey {
    const key = makeKey();
    this.keys = dropOld ? [key] : [key, ...this.keys];
    return key;
  }

  /** An RS256 JWT over `claims`, signed by `key` (default the current signing key; a stray key is not published). */
  signJwt(
    claims: Record<string, unknown>,
    key: SigningKey = this.keys[0]!,
    header: Record<string, unknown> = {},
  ): string {
    const head = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: key.kid, ...header }));
    const payload = base64url(JSON.stringify(claims));
    const signature = createSign('RSA-SHA256').update(`${head}.${payload}`).sign(key.privateKey);
    return `${head}.${payload}.${base64url(signature)}`;
  }

  /** A key Google never published (a forged token). */
  static strayKey(): SigningKey {
    return makeKey();
  }

  // ------------------------------------------------------------ Pub/Sub

  subscription(name: string, topic = ''): FakeSubscription {
    let sub = this.subscriptions.get(name);
    if (!sub) {
      sub = { name, topic, ackDeadlineSeconds: 10, messages: [] };
      this.subscriptions.set(name, sub);
    }
    return sub;
  }

  /** Publishes raw data to a subscription (what Pub/Sub does when the topic gets a message). */
  publish(subscriptionName: string, data: string): FakePubSubMessage {
    const message: FakePubSubMessage = {
      messageId: String(1_000_000 + Math.floor(Math.random() * 1e9)),
      data: Buffer.from(data).toString('base64'),
      publishTime: new Date().toISOString(),
      deliveries: 0,
      leaseUntil: 0,
      ackId: undefined,
      acked: false,
    };
    this.subscription(subscriptionName).messages.push(message);
    for (const wake of this.#pullWaiters) wake();
    return message;
  }

  /** Publishes Gmail's notification for `account`: { emailAddress, historyId } at its current history id. */
  publishGmail(subscriptionName: string, account: string, historyId?: number): FakePubSubMessage {
    const id = historyId ?? this.mailbox(account).historyId;
    return this.publish(subscriptionName, JSON.stringify({ emailAddress: account, historyId: id }));
  }

  #pullable(sub: FakeSubscription): FakePubSubMessage[] {
    const now = Date.now();
    return sub.messages.filter((m) => !m.acked && m.leaseUntil <= now);
  }

  #registerPubSub(): void {
    this.route('POST', /^\/v1\/(?<sub>projects\/[^/]+\/subscriptions\/[^/:]+):pull$/, async (req, match) => {
      if (!this.accountOf(req)) return FakeGoogle.unauthenticated();
      const sub = this.subscriptions.get(decodeURIComponent(match.groups!.sub!));
      if (!sub) return FakeGoogle.error(404, 'NOT_FOUND', 'Resource not found (resource=subscription).');
      const max = Math.max(1, Number(req.body.maxMessages) || 1);
      const deadline = Date.now() + this.pullHoldMs;
      while (this.#pullable(sub).length === 0 && Date.now() < deadline && this.server.listening) {
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            this.#pullWaiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, Math.max(1, deadline - Date.now()));
          this.#pullWaiters.add(wake);
        });
      }
      const out = this.#pullable(sub).slice(0, max);
      const now = Date.now();
      return {
        body: {
          receivedMessages: out.map((m) => {
            m.deliveries++;
            m.leaseUntil = now + sub.ackDeadlineSeconds * 1000;
            m.ackId = `ack-${m.messageId}-${m.deliveries}`;
            return {
              ackId: m.ackId,
              message: { data: m.data, messageId: m.messageId, publishTime: m.publishTime },
              deliveryAttempt: m.deliveries,
            };
          }),
        },
      };
    });
    this.route('POST', /^\/v1\/(?<sub>projects\/[^/]+\/subscriptions\/[^/:]+):acknowledge$/, (req, match) => {
      if (!this.accountOf(req)) return FakeGoogle.unauthenticated();
      const sub = this.subscriptions.get(decodeURIComponent(match.groups!.sub!));
      if (!sub) return FakeGoogle.error(404, 'NOT_FOUND', 'Resource not found (resource=subscription).');
      const ackIds = new Set<string>(Array.isArray(req.body.ackIds) ? req.body.ackIds : []);
      // Like Pub/Sub, an ack id from an expired lease (the message was handed out again) does nothing.
      for (const m of sub.messages) if (m.ackId !== undefined && ackIds.has(m.ackId)) m.acked = true;
      return { body: {} };
    });
  }

  // ------------------------------------------------------------ Gmail

  mailbox(account: string): FakeMailbox {
    let box = this.mailboxes.get(account);
    if (!box) {
      box = { account, historyId: 1000, historyFloor: 0, history: [], messages: new Map(), watches: [], stops: 0 };
      this.mailboxes.set(account, box);
    }
    return box;
  }

  /** Adds a message (a messageAdded history entry); returns its id. */
  addMessage(account: string, spec: FakeMessageSpec = {}): string {
    const box = this.mailbox(account);
    const n = this.#nextMessage++;
    const id = `msg${n.toString(16).padStart(12, '0')}`;
    const text = spec.text ?? `Body of message ${n}`;
    const html = spec.html ?? `<html><body><p>${text.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</p></body></html>`;
    const headers = [
      { name: 'From', value: spec.from ?? `Sender ${n} <sender${n}@example.com>` },
      { name: 'To', value: account },
      { name: 'Subject', value: spec.subject ?? `Subject ${n}` },
      { name: 'Date', value: new Date().toUTCString() },
    ];
    const part = (mimeType: string, content: string, partId: string): unknown => ({
      partId,
      mimeType,
      filename: '',
      headers: [{ name: 'Content-Type', value: `${mimeType}; charset="UTF-8"` }],
      body: { size: Buffer.byteLength(content), data: base64url(content) },
    });
    let payload: any;
    switch (spec.format ?? 'plain') {
      case 'plain':
        payload = { ...(part('text/plain', text, '') as object), headers };
        break;
      case 'html':
        payload = { ...(part('text/html', html, '') as object), headers };
        break;
      case 'alternative':
        payload = {
          partId: '',
          mimeType: 'multipart/alternative',
          headers,
          body: { size: 0 },
          parts: [part('text/plain', text, '0'), part('text/html', html, '1')],
        };
        break;
      case 'nested':
        payload = {
          partId: '',
          mimeType: 'multipart/mixed',
          headers,
          body: { size: 0 },
          parts: [
            {
              partId: '0',
              mimeType: 'multipart/alternative',
              headers: [],
              body: { size: 0 },
              parts: [part('text/plain', text, '0.0'), part('text/html', html, '0.1')],
            },
            {
              partId: '1',
              mimeType: 'application/pdf',
              filename: 'invoice.pdf',
              headers: [],
              body: { size: 12345, attachmentId: 'att-1' },
            },
          ],
        };
        break;
    }
    box.historyId++;
    const message: FakeMessage = {
      id,
      threadId: id,
      labelIds: spec.labels ?? ['INBOX', 'UNREAD'],
      snippet: spec.snippet ?? text.slice(0, 100),
      historyId: String(box.historyId),
      internalDate: String(Date.now()),
      payload,
    };
    box.messages.set(id, message);
    box.history.push({ id: box.historyId, messageId: id });
    return id;
  }

  #box(req: FakeRequest, user: string): FakeMailbox | FakeAnswer {
    const account = this.accountOf(req);
    if (!account) return FakeGoogle.unauthenticated();
    if (user !== 'me' && decodeURIComponent(user) !== account) {
      return FakeGoogle.error(403, 'PERMISSION_DENIED', 'Delegation denied for ' + account);
    }
    return this.mailbox(account);
  }

  #registerGmail(): void {
    const users = '^\\/gmail\\/v1\\/users\\/(?<user>[^/]+)';
    const boxOr = (req: FakeRequest, match: RegExpExecArray): FakeMailbox | FakeAnswer =>
      this.#box(req, match.groups!.user!);
    const isBox = (x: FakeMailbox | FakeAnswer): x is FakeMailbox => 'messages' in x;

    this.route('POST', new RegExp(`${users}\\/watch$`), (req, match) => {
      const box = boxOr(req, match);
      if (!isBox(box)) return box;
      if (typeof req.body.topicName !== 'string' || !/^projects\/[^/]+\/topics\/[^/]+$/.test(req.body.topicName)) {
        return FakeGoogle.error(400, 'INVALID_ARGUMENT', 'Invalid topicName');
      }
      box.watches.push({ topicName: req.body.topicName, labelIds: req.body.labelIds ?? [], at: Date.now() });
      return { body: { historyId: String(box.historyId), expiration: String(Date.now() + 7 * 86_400_000) } };
    });
    this.route('POST', new RegExp(`${users}\\/stop$`), (req, match) => {
      const box = boxOr(req, match);
      if (!isBox(box)) return box;
      box.stops++;
      return { status: 204 };
    });
    this.route('GET', new RegExp(`${users}\\/profile$`), (req, match) => {
      const box = boxOr(req, match);
      if (!isBox(box)) return box;
      return {
        body: { emailAddress: box.account, historyId: String(box.historyId), messagesTotal: box.messages.size },
      };
    });
    this.route('GET', new RegExp(`${users}\\/history$`), (req, match) => {
      const box = boxOr(req, match);
      if (!isBox(box)) return box;
      const start = Number(req.query.get('startHistoryId'));
      if (!Number.isInteger(start) || start <= 0)
        return FakeGoogle.error(400, 'INVALID_ARGUMENT', 'Invalid startHistoryId');
      if (start < box.historyFloor) return FakeGoogle.error(404, 'NOT_FOUND', 'Requested entity was not found.');
      const label = req.query.get('labelId');
      const entries = box.history.filter((h) => {
        if (h.id <= start) return false;
        const m = box.messages.get(h.messageId);
        return !label || (m?.labelIds.includes(label) ?? false);
      });
      const offset = Number(req.query.get('pageToken') ?? '0') || 0;
      const size = Math.min(this.historyPageSize, Number(req.query.get('maxResults')) || this.historyPageSize);
      const page = entries.slice(offset, offset + size);
      const next = offset + size < entries.length ? String(offset + size) : undefined;
      return {
        body: {
          history: page.map((h) => {
            const m = box.messages.get(h.messageId);
            const ref = { id: h.messageId, threadId: h.messageId, labelIds: m?.labelIds ?? [] };
            return { id: String(h.id), messages: [ref], messagesAdded: [{ message: ref }] };
          }),
          ...(next ? { nextPageToken: next } : {}),
          historyId: String(box.historyId),
        },
      };
    });
    this.route('GET', new RegExp(`${users}\\/messages\\/(?<id>[^/]+)$`), (req, match) => {
      const box = boxOr(req, match);
      if (!isBox(box)) return box;
      const m = box.messages.get(decodeURIComponent(match.groups!.id!));
      if (!m) return FakeGoogle.error(404, 'NOT_FOUND', 'Requested entity was not found.');
      return { body: m };
    });
    this.route('GET', new RegExp(`${users}\\/messages$`), (req, match) => {
      const box = boxOr(req, match);
      if (!isBox(box)) return box;
      const labels = req.query.getAll('labelIds');
      const all = [...box.messages.values()].reverse().filter((m) => labels.every((l) => m.labelIds.includes(l)));
      const offset = Number(req.query.get('pageToken') ?? '0') || 0;
      const size = Math.min(500, Number(req.query.get('maxResults')) || 100);
      const page = all.slice(offset, offset + size);
      return {
        body: {
          messages: page.map((m) => ({ id: m.id, threadId: m.threadId })),
          ...(offset + size < all.length ? { nextPageToken: String(offset + size) } : {}),
          resultSizeEstimate: all.length,
        },
      };
    });
  }
}
