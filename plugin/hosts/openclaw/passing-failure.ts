// Which failed OpenClaw runs and deliveries may pass when tried again (hooks.retry).
// Runs: OpenClaw's agent.wait reports a failed run by the sentence it would show a person (its
// failover "user copy", openclaw 2026.9.x), not by the provider's status, and only after its own
// same-model retries within the run; these sentences are the ones it gives for an overloaded provider
// (503/529), a rate limit (429), a provider's 5xx and a provider it could not reach
// (test-openclaw/after-the-200.ts checks them against a real OpenClaw).

export interface ProviderFailure {
  retryable: boolean;
  /** The wait OpenClaw announced ("ready in ~30s"), in ms. */
  retryAfterMs?: number;
}

/** OpenClaw's sentences for a failure that may pass. */
const PASSING = [
  // "⚠️ fake/m1 request failed (provider internal error, HTTP 503). This is usually temporary — try again shortly."
  /\bThis is usually temporary\b/i,
  /\brequest failed \((?:[^)]*, )?HTTP (?:429|5\d\d)\)/i,
  /\btemporarily overloaded\b/i,
  /\bmodel is at capacity\b/i,
  /\brate limit reached\b/i,
  /\bwas rate-limited\b/i,
  /\brate-limited — ready in\b/i,
  /\brate-limited or overloaded\b/i,
  /\breturned HTTP 429 before replying\b/i,
  /\bprovider returned an internal error\b/i,
  /\bLLM request timed out\b/i,
  /\bnetwork connection error\b/i,
  /\b(?:connection (?:refused|reset|error)|fetch failed|network (?:is unreachable|request failed)|ECONNREFUSED|ECONNRESET|socket hang up)\b/i,
];

/** "ready in ~45s" / "ready in ~3 min": the cooldown OpenClaw announced for a rate-limited provider. */
const ANNOUNCED = /ready in ~(\d{1,6})\s*(s|min)\b/i;

export function classifyRunError(error: string | undefined): ProviderFailure {
  if (!error || !PASSING.some((re) => re.test(error))) return { retryable: false };
  const announced = ANNOUNCED.exec(error);
  if (!announced) return { retryable: true };
  const amount = Number(announced[1]);
  return { retryable: true, retryAfterMs: announced[2]!.toLowerCase() === 's' ? amount * 1000 : amount * 60_000 };
}

/** Network failures of a channel's send that may pass (the request may not have reached the platform). */
const NETWORK_CODES = new Set([
  'EAI_AGAIN',
  'ECONNREFUSED',
  'ECONNRESET',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;

const whole = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

/**
 * A channel adapter's send failure: each OpenClaw channel throws its platform library's error, so
 * this reads the shapes they share: an HTTP status (status, statusCode, error_code, response.status),
 * a wait in seconds (retry_after, parameters.retry_after, retryAfter) and an errno code, on the
 * error or its cause. 429 and 5xx and the network may pass; anything else will not.
 */
export function classifyDeliveryError(err: unknown): ProviderFailure {
  for (let e = err, depth = 0; e !== undefined && depth < 3; e = field(e, 'cause'), depth++) {
    const status =
      whole(field(e, 'status')) ??
      whole(field(e, 'statusCode')) ??
      whole(field(e, 'error_code')) ??
      whole(field(field(e, 'response'), 'status'));
    const seconds =
      whole(field(e, 'retry_after')) ??
      whole(field(field(e, 'parameters'), 'retry_after')) ??
      whole(field(e, 'retryAfter'));
    const code = field(e, 'code');
    if (status === 429 || (status !== undefined && status >= 500 && status <= 599))
      return seconds !== undefined && seconds > 0
        ? { retryable: true, retryAfterMs: seconds * 1000 }
        : { retryable: true };
    if (status !== undefined) return { retryable: false };
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return { retryable: true };
  }
  return { retryable: false };
}
