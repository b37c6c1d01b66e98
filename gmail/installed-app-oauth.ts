// OAuth for an installed app (RFC 8252): the consent page redirects to a one-shot listener on
// 127.0.0.1, the code is bound to this run by PKCE (S256) and a random state, and exchanged for a
// refresh token at the token endpoint. Codes, verifiers and tokens never appear in a message.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { googleRequest } from './google-request.ts';

/**
 * gmail.readonly is the least Gmail scope users.watch, history.list and messages.get accept with bodies
 * (gmail.metadata has no bodies; gmail.modify could change mail, which hookgate never does). pubsub
 * covers topics, their IAM policy, subscriptions, pull and acknowledge, without cloud-platform's reach
 * over the whole project.
 */
export const GMAIL_SETUP_SCOPES = [
  'https://www.googleapis.com/auth/gmail.readonly',
  'https://www.googleapis.com/auth/pubsub',
] as const;

export interface OAuthClient {
  client_id: string;
  client_secret: string;
}

/** The client from Google's downloaded JSON for a Desktop app client ({ "installed": { … } }). */
export async function readClientSecretFile(file: string): Promise<OAuthClient> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the client secret file ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, {
      cause: err,
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON; download the OAuth client's JSON again from the Google Cloud console`);
  }
  const root = (parsed ?? {}) as Record<string, unknown>;
  if (root.web !== undefined && root.installed === undefined)
    throw new Error(
      `${file} is for a "Web application" OAuth client; create a client of type "Desktop app" and download its JSON`,
    );
  const installed = (root.installed ?? {}) as Record<string, unknown>;
  const { client_id, client_secret } = installed;
  if (typeof client_id !== 'string' || !client_id || typeof client_secret !== 'string' || !client_secret)
    throw new Error(`${file} has no installed.client_id and installed.client_secret; is it an OAuth client JSON?`);
  return { client_id, client_secret };
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

/** A fresh verifier (43 characters of base64url, 256 bits) and its S256 challenge. */
export function createPkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function createState(): string {
  return randomBytes(16).toString('base64url');
}

export interface AuthorizationRequest {
  authUrl: string;
  clientId: string;
  redirectUri: string;
  challenge: string;
  state: string;
  loginHint?: string;
}

export function authorizationUrl(r: AuthorizationRequest): string {
  const url = new URL(r.authUrl);
  url.searchParams.set('client_id', r.clientId);
  url.searchParams.set('redirect_uri', r.redirectUri);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', GMAIL_SETUP_SCOPES.join(' '));
  url.searchParams.set('code_challenge', r.challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  url.searchParams.set('state', r.state);
  // offline + consent: Google returns a refresh token every time, not only on the first consent.
  url.searchParams.set('access_type', 'offline');
  url.searchParams.set('prompt', 'consent');
  if (r.loginHint) url.searchParams.set('login_hint', r.loginHint);
  return url.toString();
}

/** What came back from the consent page: a code, or Google's refusal (access_denied, …). */
export type Callback = { code: string } | { error: string };

/**
 * Reads a code from what the user pasted: the bare code, or the whole redirect URL from the browser's
 * address bar (then its state must be ours).
 */
export function parsePastedCallback(text: string, state: string): Callback {
  const trimmed = text.trim();
  if (!trimmed) return { error: 'nothing was pasted' };
  if (!/^https?:\/\//i.test(trimmed)) return { code: trimmed };
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return { error: 'the pasted text is not a URL' };
  }
  return callbackFrom(url.searchParams, state) ?? { error: 'the pasted URL has no code' };
}

function callbackFrom(params: URLSearchParams, state: string): Callback | undefined {
  const error = params.get('error');
  const code = params.get('code');
  if (!error && !code) return undefined;
  if (params.get('state') !== state) return { error: 'state mismatch (not the answer to this setup)' };
  if (error) return { error: /^[a-z_]{1,64}$/.test(error) ? error : 'refused' };
  return { code: code! };
}

export interface LoopbackReceiver {
  /** http://127.0.0.1:<port>/ : the redirect URI to register in the authorization request. */
  redirectUri: string;
  /** Settles with the first callback carrying our state. */
  callback: Promise<Callback>;
  close(): Promise<void>;
}

const PAGE = (text: string): string => `<!doctype html><meta charset="utf-8"><title>hookgate</title><p>${text}</p>`;

/**
 * A listener on 127.0.0.1 (random port) for the consent page's redirect. A request with another state
 * (a stale tab, another local program) is answered 400 and does not end the wait.
 */
export async function startLoopbackReceiver(state: string): Promise<LoopbackReceiver> {
  let settle!: (c: Callback) => void;
  const callback = new Promise<Callback>((resolve) => (settle = resolve));
  let done = false;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const result = req.method === 'GET' && url.pathname === '/' ? callbackFrom(url.searchParams, state) : undefined;
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    if (!result || ('error' in result && result.error.startsWith('state mismatch'))) {
      res.writeHead(400).end(PAGE('This is not the answer hookgate is waiting for.'));
      return;
    }
    if (done) {
      res.writeHead(409).end(PAGE('hookgate has already received an answer; see the terminal.'));
      return;
    }
    done = true;
    res
      .writeHead(200)
      .end(PAGE('code' in result ? 'hookgate is authorized. You can close this tab.' : 'Authorization refused.'));
    settle(result);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}/`,
    callback,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface CodeExchange {
  tokenUrl: string;
  client: OAuthClient;
  code: string;
  verifier: string;
  redirectUri: string;
  step: string;
}

export interface GrantedTokens {
  refresh_token: string;
  access_token: string;
  expires_in: number;
  scopes: string[];
}

/** The authorization-code grant with the PKCE verifier. */
export async function exchangeCode(x: CodeExchange): Promise<GrantedTokens> {
  const body = await googleRequest<Record<string, unknown>>({
    step: x.step,
    url: x.tokenUrl,
    form: {
      grant_type: 'authorization_code',
      code: x.code,
      code_verifier: x.verifier,
      redirect_uri: x.redirectUri,
      client_id: x.client.client_id,
      client_secret: x.client.client_secret,
    },
  });
  const { refresh_token, access_token, expires_in, scope } = body;
  if (typeof access_token !== 'string' || !access_token)
    throw new Error(`${x.step} failed: the token endpoint answered without an access token`);
  if (typeof refresh_token !== 'string' || !refresh_token)
    throw new Error(
      `${x.step} failed: Google sent no refresh token. Remove hookgate's access at ` +
        'https://myaccount.google.com/permissions and run setup again.',
    );
  return {
    refresh_token,
    access_token,
    expires_in: typeof expires_in === 'number' ? expires_in : 3600,
    scopes: typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [...GMAIL_SETUP_SCOPES],
  };
}

/** Scopes the user unticked on the consent page (Google lets them grant some and not others). */
export function missingScopes(granted: readonly string[]): string[] {
  return GMAIL_SETUP_SCOPES.filter((s) => !granted.includes(s));
}
