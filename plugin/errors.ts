// Errors that become HTTP responses: a status, a stable code and a sentence for humans.

export type ErrorCode =
  | 'token_in_query'
  | 'method_not_allowed'
  | 'unauthorized'
  | 'rate_limited'
  | 'not_found'
  | 'payload_too_large'
  | 'body_timeout'
  | 'invalid_json'
  | 'invalid_payload'
  | 'session_key_disabled'
  | 'session_key_not_allowed'
  | 'agent_not_allowed'
  | 'model_not_allowed'
  | 'mapping_failed'
  | 'overloaded'
  | 'internal_error';

export class HookError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly headers?: Readonly<Record<string, string>>;

  constructor(status: number, code: ErrorCode, message: string, headers?: Readonly<Record<string, string>>) {
    // These are answers, not faults: capturing a stack trace per rejected request is wasted work.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'HookError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** A config problem; every message names the key it is about. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[], readonly file?: string) {
    super(`${file ? `${file}: ` : ''}invalid config:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}
