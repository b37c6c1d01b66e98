// Errors that become HTTP answers, and the one catalogue they are made from: every refusal the plugin
// or a host sends has a status, a stable code and a sentence for humans, and is sent by the same
// writer (http/answers.ts) as `{ ok: false, error, code }`.

export type ErrorCode =
  | 'token_in_query'
  | 'method_not_allowed'
  | 'unauthorized'
  | 'forbidden'
  | 'rate_limited'
  | 'source_not_allowed'
  | 'hook_rate_limited'
  | 'budget_exhausted'
  | 'not_found'
  | 'payload_too_large'
  | 'body_timeout'
  | 'invalid_json'
  | 'invalid_body'
  | 'handshake_failed'
  | 'invalid_payload'
  | 'session_key_disabled'
  | 'session_key_not_allowed'
  | 'agent_not_allowed'
  | 'model_not_allowed'
  | 'mapping_failed'
  | 'signature_invalid'
  | 'signature_expired'
  | 'invalid_idempotency_key'
  | 'idempotency_key_reused'
  | 'idempotency_key_in_flight'
  | 'too_many_items'
  | 'output_too_large'
  | 'overloaded'
  | 'paused_full'
  | 'queue_unavailable'
  | 'queue_full'
  | 'bad_request'
  | 'headers_too_large'
  | 'request_timeout'
  | 'expectation_failed'
  | 'internal_error';

type Headers = Readonly<Record<string, string>>;

/**
 * A refusal: thrown by any phase of a request and caught in one place, which answers it. It is an
 * answer rather than a fault, so it captures no stack: an attacker can make us refuse at will.
 */
export class HookError extends Error {
  override readonly name = 'HookError';
  readonly status: number;
  readonly code: ErrorCode;
  readonly headers: Headers | undefined;

  constructor(status: number, code: ErrorCode, message: string, headers?: Headers) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.status = status;
    this.code = code;
    this.headers = headers;
  }

  /** The same refusal, answered with Connection: close (the rest of the request will not be read). */
  closing(): HookError {
    if (this.headers?.connection === 'close') return this;
    return new HookError(this.status, this.code, this.message, { ...this.headers, connection: 'close' });
  }
}

/** A config problem; every message names the key it is about. */
export class ConfigError extends Error {
  constructor(
    readonly problems: readonly string[],
    readonly file?: string,
  ) {
    super(`${file ? `${file}: ` : ''}invalid config:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }

  /**
   * The message with every quoted value replaced by "…": fit for a log, where a value typed into the
   * wrong key (a token, say) must not land. The keys still say where each problem is.
   */
  withoutValues(): string {
    // A mapping's id (in "hooks.mappings[2] (id "github")") is a name, not a value: it stays.
    return this.message.replace(/(\(id )?"(?:[^"\\\n]|\\.)*"/g, (quoted, id: string | undefined) =>
      id ? quoted : '"…"',
    );
  }
}

const CLOSE: Headers = Object.freeze({ connection: 'close' });
const RETRY_SOON: Headers = Object.freeze({ 'retry-after': '5' });

// Refusals that anyone can provoke as fast as they can send are made once.
const TOKEN_IN_QUERY = new HookError(
  400,
  'token_in_query',
  'the token may not be sent in the query string; use the Authorization: Bearer header',
);
const METHOD_NOT_ALLOWED = new HookError(405, 'method_not_allowed', 'only POST is accepted', { allow: 'POST' });
const UNAUTHORIZED = new HookError(401, 'unauthorized', 'missing or wrong hook token');
const NOT_FOUND = new HookError(404, 'not_found', 'no such hook');
const SIGNATURE_INVALID = new HookError(401, 'signature_invalid', 'the signature is missing or does not match');
const SIGNATURE_EXPIRED = new HookError(401, 'signature_expired', 'the signed timestamp is outside the allowed window');
const SOURCE_NOT_ALLOWED = new HookError(403, 'source_not_allowed', 'requests from this address are not accepted here');
const HANDSHAKE_FAILED = new HookError(403, 'handshake_failed', 'the handshake did not verify');
const INTERNAL = new HookError(500, 'internal_error', 'internal error; the request was not processed');
/** 429s differ only in their seconds, which are few: one per value. */
const rateLimitedBySeconds = new Map<number, HookError>();
const hookRateLimitedBySeconds = new Map<number, HookError>();

/** The catalogue: every HookError the plugin and its hosts send is made here. */
export const refuse = {
  tokenInQuery: (): HookError => TOKEN_IN_QUERY,
  methodNotAllowed: (allow = 'POST', what = 'only POST is accepted'): HookError =>
    allow === 'POST' && what === METHOD_NOT_ALLOWED.message
      ? METHOD_NOT_ALLOWED
      : new HookError(405, 'method_not_allowed', what, { allow }),
  unauthorized: (what = UNAUTHORIZED.message): HookError =>
    what === UNAUTHORIZED.message ? UNAUTHORIZED : new HookError(401, 'unauthorized', what),
  /** The console: a change without the session's anti-forgery token, or from another origin. */
  forbidden: (what: string): HookError => new HookError(403, 'forbidden', what),
  rateLimited(seconds: number): HookError {
    let err = rateLimitedBySeconds.get(seconds);
    if (!err) {
      err = new HookError(429, 'rate_limited', `too many failed authentications; retry in ${seconds} s`, {
        'retry-after': String(seconds),
      });
      if (rateLimitedBySeconds.size < 4096) rateLimitedBySeconds.set(seconds, err);
    }
    return err;
  },
  sourceNotAllowed: (): HookError => SOURCE_NOT_ALLOWED,
  hookRateLimited(seconds: number): HookError {
    let err = hookRateLimitedBySeconds.get(seconds);
    if (!err) {
      err = new HookError(429, 'hook_rate_limited', `this hook's rate limit is reached; retry in ${seconds} s`, {
        'retry-after': String(seconds),
      });
      if (hookRateLimitedBySeconds.size < 4096) hookRateLimitedBySeconds.set(seconds, err);
    }
    return err;
  },
  signatureInvalid: (): HookError => SIGNATURE_INVALID,
  invalidIdempotencyKey: (): HookError =>
    new HookError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1 to 256 printable ASCII characters'),
  idempotencyKeyReused: (): HookError =>
    new HookError(
      422,
      'idempotency_key_reused',
      'this idempotency key was already used with another body; send a new key for a new request',
    ),
  idempotencyKeyInFlight: (): HookError =>
    new HookError(
      409,
      'idempotency_key_in_flight',
      'the first request with this idempotency key is still being handled by another instance; retry later',
      RETRY_SOON,
    ),
  tooManyItems: (max: number): HookError =>
    new HookError(400, 'too_many_items', `the payload has more than ${max} items to act on`),
  outputTooLarge: (what: string): HookError => new HookError(400, 'output_too_large', what),
  signatureExpired: (): HookError => SIGNATURE_EXPIRED,
  notFound: (what = NOT_FOUND.message): HookError =>
    what === NOT_FOUND.message ? NOT_FOUND : new HookError(404, 'not_found', what),
  payloadTooLarge: (limit: number): HookError =>
    new HookError(413, 'payload_too_large', `body is larger than ${limit} bytes`, CLOSE),
  bodyTimeout: (ms: number): HookError =>
    new HookError(408, 'body_timeout', `the body was not received within ${ms / 1000} s`, CLOSE),
  /**
   * Not bad JSON but a request that is not whole HTTP: the same code the gateway's parser answers a
   * half-closed request with (http/protocol-errors.ts). The client is usually gone; the request log keeps it.
   */
  bodyCutOff: (): HookError => new HookError(400, 'bad_request', 'the request body was cut off by the client', CLOSE),
  invalidJson: (what: string): HookError => new HookError(400, 'invalid_json', what),
  invalidBody: (what: string): HookError => new HookError(400, 'invalid_body', what),
  handshakeFailed: (): HookError => HANDSHAKE_FAILED,
  invalidPayload: (what: string): HookError => new HookError(400, 'invalid_payload', what),
  sessionKeyDisabled: (what: string): HookError => new HookError(400, 'session_key_disabled', what),
  sessionKeyNotAllowed: (what: string): HookError => new HookError(400, 'session_key_not_allowed', what),
  agentNotAllowed: (what: string): HookError => new HookError(400, 'agent_not_allowed', what),
  modelNotAllowed: (what: string): HookError => new HookError(400, 'model_not_allowed', what),
  mappingFailed: (what: string): HookError => new HookError(500, 'mapping_failed', what),
  overloaded: (what: string, headers: Headers = RETRY_SOON): HookError =>
    new HookError(503, 'overloaded', what, headers),
  pausedFull: (max: number, retryAfterSeconds: number): HookError =>
    new HookError(
      503,
      'paused_full',
      `${max} actions are already held for paused hooks (hooks.maxHeld); resume a hook or try again later`,
      { 'retry-after': String(retryAfterSeconds) },
    ),
  pausedFullBytes: (maxBytes: number, retryAfterSeconds: number): HookError =>
    new HookError(
      503,
      'paused_full',
      `holding this action would pass ${maxBytes} bytes held for paused hooks (hooks.maxHeldBytes); resume a hook or try again later`,
      { 'retry-after': String(retryAfterSeconds) },
    ),
  queueUnavailable: (
    retryAfterSeconds: number,
    what = 'the queue (hooks.queue) could not take the action; nothing was accepted, try again later',
  ): HookError => new HookError(503, 'queue_unavailable', what, { 'retry-after': String(retryAfterSeconds) }),
  queueFull: (max: number, retryAfterSeconds: number): HookError =>
    new HookError(
      503,
      'queue_full',
      `${max} actions are already waiting in the queue (hooks.queue.maxWaiting); nothing was accepted, try again later`,
      { 'retry-after': String(retryAfterSeconds) },
    ),
  budgetExhausted: (retryAfterSeconds: number): HookError =>
    new HookError(
      429,
      'budget_exhausted',
      `this hook's run budget is spent for its window; retry in ${retryAfterSeconds} s`,
      { 'retry-after': String(retryAfterSeconds) },
    ),
  badRequest: (what: string, headers?: Headers): HookError => new HookError(400, 'bad_request', what, headers),
  headersTooLarge: (): HookError => new HookError(431, 'headers_too_large', 'the request headers are too large', CLOSE),
  requestTimeout: (): HookError =>
    new HookError(408, 'request_timeout', 'the request headers did not arrive in time', CLOSE),
  expectationFailed: (): HookError =>
    new HookError(417, 'expectation_failed', 'only "Expect: 100-continue" is supported', CLOSE),
  internal: (what?: string): HookError => (what === undefined ? INTERNAL : new HookError(500, 'internal_error', what)),
};
