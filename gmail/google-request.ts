// One JSON request to a Google API, and the one error every Google failure becomes. GoogleApiError
// names the step that failed, Google's HTTP status and its error status/reason, and what to do next.
// Tokens never go into a message: they travel only in the Authorization header or a form body, and
// anything in Google's own message that looks like one is masked. A request is bounded from its start
// to the answer's last byte (timeoutMs), and its signal (the watcher's stop) ends it at once.
import { boundedFetch, ExchangeTimeout } from '../plugin/util/bounded-fetch.ts';

export interface GoogleRequestOptions {
  /** What hookgate was doing, for the error: "gmail history.list", "token refresh", … */
  step: string;
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Sent as `Authorization: Bearer <accessToken>`. */
  accessToken?: string;
  /** Query parameters; arrays repeat the key; undefined values are left out. */
  query?: Record<string, string | number | boolean | readonly string[] | undefined>;
  /** A JSON body. */
  json?: unknown;
  /** An application/x-www-form-urlencoded body (the OAuth token endpoint). */
  form?: Record<string, string>;
  /** From the request to the answer's last byte. Default 30 s. */
  timeoutMs?: number;
  /** Ends the request at once (a stop): it rejects with the signal's reason. */
  signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const MESSAGE_MAX_CHARS = 300;

export class GoogleApiError extends Error {
  override readonly name = 'GoogleApiError';
  /** The step that failed. */
  readonly step: string;
  /** HTTP status; 0 when no answer came (network error or timeout). */
  readonly status: number;
  /** Google's `error.status` (PERMISSION_DENIED, …) or the OAuth `error` (invalid_grant, …). */
  readonly googleStatus: string | undefined;
  /** Google's first reason (SERVICE_DISABLED, accessNotConfigured, insufficientPermissions, …). */
  readonly reason: string | undefined;
  /** Google's own sentence, clipped and with anything token-like masked. */
  readonly googleMessage: string | undefined;
  /** What the user can do about it. */
  readonly hint: string;

  constructor(init: { step: string; status: number; googleStatus?: string; reason?: string; googleMessage?: string }) {
    const hint = hintFor(init.status, init.googleStatus, init.reason);
    const what = [init.status ? `HTTP ${init.status}` : 'no answer', init.googleStatus, init.reason]
      .filter((part, i, all) => part && all.indexOf(part) === i)
      .join(' ');
    super(`${init.step} failed: ${what}${init.googleMessage ? `: ${init.googleMessage}` : ''}. ${hint}`);
    this.step = init.step;
    this.status = init.status;
    this.googleStatus = init.googleStatus;
    this.reason = init.reason;
    this.googleMessage = init.googleMessage;
    this.hint = hint;
  }

  /** Worth trying again later: no answer, 408, 429 or a 5xx. */
  get retryable(): boolean {
    return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
  }

  /** The refresh token no longer works (revoked, expired, or the OAuth client was deleted). */
  get grantRevoked(): boolean {
    return this.googleStatus === 'invalid_grant' || this.googleStatus === 'unauthorized_client';
  }
}

export async function googleRequest<T = Record<string, unknown>>(options: GoogleRequestOptions): Promise<T> {
  const url = new URL(options.url);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value as readonly string[]) url.searchParams.append(key, v);
    else url.searchParams.set(key, String(value));
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.accessToken !== undefined) headers.authorization = `Bearer ${options.accessToken}`;
  let body: string | undefined;
  if (options.form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let response: Awaited<ReturnType<typeof boundedFetch>>;
  try {
    response = await boundedFetch(
      url,
      { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, body },
      { timeoutMs, signal: options.signal },
    );
  } catch (err) {
    if (options.signal?.aborted) throw err;
    const timedOut = err instanceof ExchangeTimeout;
    throw new GoogleApiError({
      step: options.step,
      status: 0,
      reason: timedOut ? 'timeout' : 'network',
      googleMessage: timedOut ? `no whole answer within ${timeoutMs} ms` : networkCause(err),
    });
  }
  if (response.cut !== undefined) {
    throw new GoogleApiError({
      step: options.step,
      status: 0,
      reason: 'network',
      googleMessage: networkCause(response.cut),
    });
  }
  const text = response.body.toString('utf8');
  let parsed: unknown = {};
  if (text.trim() !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (!response.ok) throw errorFrom(options.step, response.status, parsed);
  if (parsed === undefined || typeof parsed !== 'object' || parsed === null) {
    throw new GoogleApiError({
      step: options.step,
      status: response.status,
      reason: 'invalid_response',
      googleMessage: 'the answer was not a JSON object',
    });
  }
  return parsed as T;
}

/** Google's two error shapes: `{ error: { code, status, message, errors, details } }` and OAuth's
 * `{ error: "invalid_grant", error_description }`. */
function errorFrom(step: string, status: number, body: unknown): GoogleApiError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof b.error === 'string') {
    return new GoogleApiError({ step, status, googleStatus: b.error, googleMessage: clip(b.error_description) });
  }
  const e = (typeof b.error === 'object' && b.error !== null ? b.error : {}) as Record<string, unknown>;
  return new GoogleApiError({
    step,
    status,
    googleStatus: typeof e.status === 'string' ? e.status : undefined,
    reason: firstReason(e),
    googleMessage: clip(e.message),
  });
}

function firstReason(error: Record<string, unknown>): string | undefined {
  for (const list of [error.details, error.errors]) {
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const reason = (item as { reason?: unknown } | null)?.reason;
      if (typeof reason === 'string' && reason) return reason;
    }
  }
  return undefined;
}

function clip(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const masked = value
    .replace(/ya29\.[\w.-]+/g, '[token]')
    .replace(/1\/\/[\w.-]+/g, '[token]')
    .replace(/[\u0000-\u001f\u007f]+/g, ' ');
  return masked.length > MESSAGE_MAX_CHARS ? `${masked.slice(0, MESSAGE_MAX_CHARS)}…` : masked;
}

function networkCause(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === 'string' ? cause.code : 'network error';
}

function hintFor(status: number, googleStatus: string | undefined, reason: string | undefined): string {
  if (googleStatus === 'invalid_grant') {
    return 'The refresh token was revoked or has expired (an OAuth app in "testing" publishing status gets refresh tokens that expire after 7 days); run `hookgate webhooks gmail setup` again.';
  }
  if (googleStatus === 'invalid_client' || googleStatus === 'unauthorized_client') {
    return 'The OAuth client was deleted or its secret changed; download the client JSON again and run `hookgate webhooks gmail setup`.';
  }
  if (status === 0) return 'Check the network connection; hookgate retries with backoff.';
  if (reason === 'SERVICE_DISABLED' || reason === 'accessNotConfigured') {
    return 'Enable this API in the Google Cloud project (APIs & Services > Library), wait a minute, then try again.';
  }
  if (status === 401)
    return 'The access token was refused; if this persists, run `hookgate webhooks gmail setup` again.';
  if (status === 403) {
    return 'The account lacks a permission or an OAuth scope for this; check the project id and its IAM roles, or run setup again to grant the scopes.';
  }
  if (status === 404)
    return 'Not found: check the project id, topic and subscription names (`hookgate webhooks gmail setup` creates them).';
  if (status === 429 || status >= 500) return 'Google is busy or failing; hookgate retries with backoff.';
  return 'Check the settings in hooks.gmail.';
}
