// One hook request as the request log keeps it: what the request was and how it was answered, never
// its payload, token or signature. Names no mapping owns and idempotency keys are chosen by the
// sender: the first is stored only as the prefix with an ellipsis (as the log line does), the second
// length-capped and without control characters; the refusal's sentence is the catalogue's.

/** The most entries one page of the log answers (`?limit=`). */
export const REQUESTS_PAGE_MAX = 1000;
/** Idempotency keys are kept to this many characters. */
export const LOGGED_KEY_MAX = 80;

/** How long one of a request's phases took, to a tenth of a millisecond. */
export interface PhaseTime {
  name: string;
  ms: number;
}

export interface RequestEntry {
  at: string;
  requestId: string;
  client: string;
  path: string;
  /** The hook as the console shows it: wake, agent, a mapping's id, a name, or the logged path. */
  hook: string;
  /** The mapping that owned the request, when one did. */
  mapping?: string;
  status: number;
  /** The refusal's code, when the request was refused... */
  code?: string;
  /** ...and the sentence the sender received. */
  reason?: string;
  ms: number;
  /** Body bytes received. */
  bytes: number;
  idempotencyKey?: string;
  /** The key the request was carried out under (a header, a mapping's dedupe.key, a delivery id). */
  dedupeKey?: string;
  duplicate?: boolean;
  /** Its hook was paused: the action was held for the resume. */
  held?: boolean;
  /** Authenticated, but no mapping's filters took it: answered `{ ok: true, ignored: true }`, nothing done. */
  ignored?: boolean;
  /** The runs it started (or, for a duplicate, the runs of the first answer). */
  runIds?: string[];
  /** A request that waited for its runs (waitForCompletion): milliseconds waited... */
  waited?: number;
  /** ...and what it learned: ok, error, timeout, or running when the wait ended first. */
  runStatus?: string;
  /** The phases it went through, in order, with their times. */
  phases?: PhaseTime[];
}

/** As recorded: the time as a number, formatted only when read. */
export type LoggedRequest = Omit<RequestEntry, 'at'> & { atMs: number };

/** The outcome classes the log is filtered by. */
export const OUTCOMES = ['2xx', '4xx', '5xx', 'duplicate', 'held', 'ignored'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export function entryOf({ atMs, ...rest }: LoggedRequest): RequestEntry {
  return { at: new Date(atMs).toISOString(), ...rest };
}

/** A sender-chosen key as it may be stored and shown: control characters removed, length capped. */
export function loggableKey(key: string, max = LOGGED_KEY_MAX): string {
  const clean = key.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/** Whether a line read back from disk has an entry's shape (the fields the index reads). */
export function isLoggedRequest(value: unknown): value is LoggedRequest & { seq: number } {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.seq === 'number' &&
    typeof v.atMs === 'number' &&
    typeof v.requestId === 'string' &&
    typeof v.client === 'string' &&
    typeof v.path === 'string' &&
    typeof v.hook === 'string' &&
    typeof v.status === 'number' &&
    (v.code === undefined || typeof v.code === 'string')
  );
}
