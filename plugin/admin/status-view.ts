// What an operator (the admin API, the CLI) or the assistant itself (OpenClaw's agent tools) is shown
// of a running plugin: its settings in brief and the request log, one function each, so every door
// answers the same. Nothing here holds a payload, a token or a secret.
import type { HooksSnapshot } from '../request/snapshot.ts';
import { REQUEST_LOG_SIZE, type RequestEntry, type RequestLog } from '../observe/request-log.ts';

/** Hook requests shown when the caller names no limit; the log holds 1000. */
export const DEFAULT_REQUESTS_LIMIT = 100;

export interface HookView {
  id: string;
  /** <path>/<name>, or "(any)" for a mapping matched by its source alone. */
  path: string;
  action: string;
  /** How a request is admitted: "hook token" or "<scheme> signature". */
  admittedBy: string;
  transform: boolean;
}

export interface HooksStatus {
  enabled: boolean;
  path: string;
  hooks: HookView[];
  counts: {
    /** Requests in the log (at most 1000, newest kept). */
    requests: number;
    accepted: number;
    refused: number;
    duplicates: number;
    runsQueued: number;
    runsRunning: number;
  };
}

export interface StatusSource {
  snapshot(): HooksSnapshot;
  readonly requests: RequestLog;
  readonly runs: { readonly queued: number; readonly running: number };
}

export function hooksStatus(plugin: StatusSource): HooksStatus {
  const snap = plugin.snapshot();
  let accepted = 0;
  let refused = 0;
  let duplicates = 0;
  for (const r of plugin.requests.latest()) {
    if (r.status < 300) accepted++;
    else refused++;
    if (r.duplicate) duplicates++;
  }
  return {
    enabled: snap.enabled,
    path: snap.path,
    hooks: [
      { id: 'wake', path: `${snap.path}/wake`, action: 'wake', admittedBy: 'hook token', transform: false },
      { id: 'agent', path: `${snap.path}/agent`, action: 'agent', admittedBy: 'hook token', transform: false },
      ...snap.mappings.map((m) => ({
        id: m.id,
        path: m.matchPath === undefined ? '(any)' : `${snap.path}/${m.matchPath}`,
        action: m.action,
        admittedBy: m.verifier ? `${m.verifier.scheme} signature` : 'hook token',
        transform: m.transform !== undefined,
      })),
    ],
    counts: {
      requests: accepted + refused,
      accepted,
      refused,
      duplicates,
      runsQueued: plugin.runs.queued,
      runsRunning: plugin.runs.running,
    },
  };
}

export interface RequestsQuery {
  /** 1..1000; default 100. */
  limit?: number;
  /** Only requests a mapping with this id owned (or the wake/agent endpoint of that name). */
  hook?: string;
  /** Only requests at or after this time (ms since the epoch). */
  sinceMs?: number;
}

/** Whether a limit is one the log can answer: a whole number from 1 to 1000. */
export function validRequestsLimit(limit: number): boolean {
  return Number.isInteger(limit) && limit >= 1 && limit <= REQUEST_LOG_SIZE;
}

/** The newest matching requests, oldest first (GET /api/requests, hookgate_recent). */
export function recentRequests(log: RequestLog, query: RequestsQuery = {}): RequestEntry[] {
  const limit = query.limit ?? DEFAULT_REQUESTS_LIMIT;
  if (query.hook === undefined && query.sinceMs === undefined) return log.latest(limit);
  const { hook, sinceMs } = query;
  const matching = log.latest().filter((r) => {
    if (sinceMs !== undefined && Date.parse(r.at) < sinceMs) return false;
    return hook === undefined || r.mapping === hook || (r.mapping === undefined && r.path.endsWith(`/${hook}`));
  });
  return matching.slice(-limit);
}
