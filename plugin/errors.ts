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

/**
 * An answer, not a fault: a plain class rather than an Error, so refusing a request (which an
 * attacker can make us do at will) costs no stack capture.
 */
export class HookError {
  readonly name = 'HookError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    readonly message: string,
    readonly headers?: Readonly<Record<string, string>>,
  ) {}
}

/** A config problem; every message names the key it is about. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[], readonly file?: string) {
    super(`${file ? `${file}: ` : ''}invalid config:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}
