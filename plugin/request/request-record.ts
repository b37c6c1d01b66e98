// What a finished hook request leaves behind: the fields of its log line and its entry in the request
// log, from what its phases traced. Never its payload, token or signature.
import type { Waited } from './act.ts';
import type { LogFields } from '../host.ts';
import type { EndpointLabel } from '../observe/metrics.ts';
import { loggableKey, type LoggedRequest } from '../observe/request-log.ts';

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
  /** Past its budget: kept for the window's digest, nothing run. */
  digested?: boolean;
  /** Its run joined a batch (coalesce). */
  coalesced?: boolean;
  /** Authenticated, but no mapping's filters took it: answered as ignored, nothing done. */
  ignored?: boolean;
  /** A request that waited for its runs: how long, and what it learned. */
  waited?: Waited;
}

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
  if (trace.digested) fields.digested = true;
  if (trace.coalesced) fields.coalesced = true;
  if (trace.ignored) fields.ignored = true;
  if (trace.waited) {
    fields.waited = trace.waited.ms;
    fields.runStatus = trace.waited.status;
  }
  return fields;
}

/** `key`: the idempotency key it was carried out under, or the one its header named. */
export function requestEntryOf(a: Answered, trace: Trace, key: string | undefined): LoggedRequest {
  const entry: LoggedRequest = {
    atMs: Date.now(),
    requestId: a.requestId,
    client: a.client,
    path: a.path,
    status: a.status,
    ms: a.ms,
    bytes: trace.bytes,
  };
  if (trace.mapping) entry.mapping = trace.mapping;
  if (trace.code) entry.code = trace.code;
  if (key) entry.idempotencyKey = loggableKey(key);
  if (trace.duplicate) entry.duplicate = true;
  if (trace.held) entry.held = true;
  if (trace.digested) entry.digested = true;
  if (trace.coalesced) entry.coalesced = true;
  if (trace.ignored) entry.ignored = true;
  if (trace.waited) {
    entry.waited = trace.waited.ms;
    entry.runStatus = trace.waited.status;
  }
  return entry;
}
