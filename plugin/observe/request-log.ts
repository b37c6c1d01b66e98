// The last hook requests, in memory, for `GET /api/requests` and `hookgate requests`. An entry holds
// what the request was and how it was answered, never its payload, token or signature. Names no
// mapping owns and idempotency keys are chosen by the sender: the first is stored only as the
// prefix with an ellipsis (as the log line does), the second length-capped and without control
// characters.

export const REQUEST_LOG_SIZE = 1000;
/** Idempotency keys are kept to this many characters. */
export const LOGGED_KEY_MAX = 80;

export interface RequestEntry {
  at: string;
  requestId: string;
  client: string;
  path: string;
  /** The mapping that owned the request, when one did. */
  mapping?: string;
  status: number;
  /** The refusal's code, when the request was refused. */
  code?: string;
  ms: number;
  /** Body bytes received. */
  bytes: number;
  idempotencyKey?: string;
  duplicate?: boolean;
  /** Its hook was paused: the action was held for the resume. */
  held?: boolean;
  /** Past its hook's budget: kept for the window's digest, nothing run. */
  digested?: boolean;
  /** Its run joined a batch of the same key (coalesce). */
  coalesced?: boolean;
  /** Authenticated, but no mapping's filters took it: answered `{ ok: true, ignored: true }`, nothing done. */
  ignored?: boolean;
  /** A request that waited for its runs (waitForCompletion): milliseconds waited... */
  waited?: number;
  /** ...and what it learned: ok, error, timeout, or running when the wait ended first. */
  runStatus?: string;
}

/** As held in the ring: the time as a number, formatted only when read. */
export type LoggedRequest = Omit<RequestEntry, 'at'> & { atMs: number };

/** A fixed ring: adding the 1001st entry drops the oldest. */
export class RequestLog {
  readonly #ring: (LoggedRequest | undefined)[];
  #next = 0;
  #count = 0;

  constructor(readonly size = REQUEST_LOG_SIZE) {
    this.#ring = new Array<LoggedRequest | undefined>(size);
  }

  add(entry: LoggedRequest): void {
    this.#ring[this.#next] = entry;
    this.#next = (this.#next + 1) % this.size;
    if (this.#count < this.size) this.#count++;
  }

  /** The newest `limit` entries, oldest first. */
  latest(limit = this.size): RequestEntry[] {
    const n = Math.min(Math.max(0, limit), this.#count);
    const out: RequestEntry[] = [];
    for (let i = n; i > 0; i--) {
      const { atMs, ...rest } = this.#ring[(this.#next - i + this.size) % this.size]!;
      out.push({ at: new Date(atMs).toISOString(), ...rest });
    }
    return out;
  }
}

/** A sender-chosen key as it may be stored and shown: control characters removed, length capped. */
export function loggableKey(key: string): string {
  const clean = key.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '');
  return clean.length > LOGGED_KEY_MAX ? `${clean.slice(0, LOGGED_KEY_MAX)}…` : clean;
}
