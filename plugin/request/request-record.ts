// What a finished hook request leaves behind: the fields of its log line and its entry in the request
// log, from what its phases traced. Never its payload, token or signature.
import type { Waited } from './act.ts';
import type { LogFields } from '../host.ts';
import type { EndpointLabel } from '../observe/metrics.ts';
import { loggableKey, type LoggedRequest, type PhaseTime } from '../request-log/entry.ts';

/** What the lifecycle's phases note of a request as they pass, for its records. */
export interface Trace {
  authenticated: boolean;
  duplicate: boolean;
  endpoint: EndpointLabel;
  /** The owning mapping's id (from the config), '' when none. */
  mapping: string;
  bytes: number;
  code?: string;
  /** The idempotency key the plan was carried out under. */
  key?: string;
  /** Its hook was paused: the action was held. */
  held?: boolean;
  /** Authenticated, but no mapping's filters took it: answered as ignored, nothing done. */
  ignored?: boolean;
  /** A request that waited for its runs: how long, and what it learned. */
  waited?: Waited;
  /** The sentence a refusal told the sender. */
  reason?: string;
  /** The runs it started (or a duplicate's first answer named). */
  runIds?: string[];
  /** When (performance.now()) the checks before the body ended, the plan was made, the act done. */
  checkedAt?: number;
  plannedAt?: number;
  actedAt?: number;
}

/** A refusal's sentence is the catalogue's; kept to this many characters all the same. */
const REASON_MAX = 300;

/** The request as answered: what its two records share. */
export interface Answered {
  requestId: string;
  method: string | undefined;
  /** The path as it may be logged. */
  path: string;
  status: number;
  /** Milliseconds to the answer, to a tenth. */
  ms: number;
  client: string;
}

// Optional fields are assigned, not spread in: a spread of `cond ? {…} : {}` makes an object to throw away.

export function logFieldsOf(a: Answered, trace: Trace): LogFields & { status: number } {
  const fields: LogFields & { status: number } = {
    requestId: a.requestId,
    method: a.method,
    path: a.path,
    status: a.status,
    ms: a.ms,
    client: a.client,
  };
  if (trace.duplicate) fields.duplicate = true;
  if (trace.held) fields.held = true;
  if (trace.ignored) fields.ignored = true;
  if (trace.waited) {
    fields.waited = trace.waited.ms;
    fields.runStatus = trace.waited.status;
  }
  return fields;
}

/**
 * `key`: the idempotency key it was carried out under, or the one its header named; `hook`: its name
 * as the console shows it; `started` and `ended`: performance.now() at the first phase and after the
 * answer was written.
 */
export function requestEntryOf(
  a: Answered,
  trace: Trace,
  key: string | undefined,
  hook: string,
  started: number,
  ended: number,
): LoggedRequest {
  const entry: LoggedRequest = {
    atMs: Date.now(),
    requestId: a.requestId,
    client: a.client,
    path: a.path,
    hook,
    status: a.status,
    ms: a.ms,
    bytes: trace.bytes,
  };
  if (trace.mapping) entry.mapping = trace.mapping;
  if (trace.code) entry.code = trace.code;
  if (trace.reason) entry.reason = loggableKey(trace.reason, REASON_MAX);
  if (key) entry.idempotencyKey = loggableKey(key);
  if (trace.key) entry.dedupeKey = loggableKey(trace.key);
  if (trace.runIds) entry.runIds = trace.runIds;
  if (trace.duplicate) entry.duplicate = true;
  if (trace.held) entry.held = true;
  if (trace.ignored) entry.ignored = true;
  if (trace.waited) {
    entry.waited = trace.waited.ms;
    entry.runStatus = trace.waited.status;
  }
  entry.phases = phasesOf(trace, started, ended);
  return entry;
}

/** The phases the request went through, each to a tenth of a millisecond; the answer's write last. */
function phasesOf(trace: Trace, started: number, ended: number): PhaseTime[] {
  const phases: PhaseTime[] = [];
  let from = started;
  const mark = (name: string, at: number | undefined): void => {
    if (at === undefined) return;
    phases.push({ name, ms: Math.round((at - from) * 10) / 10 });
    from = at;
  };
  mark('check', trace.checkedAt);
  mark('receive', trace.plannedAt);
  mark('act', trace.actedAt);
  mark('answer', ended);
  return phases;
}
