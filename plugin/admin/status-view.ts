// What an operator (the admin API, the CLI) or the assistant itself (OpenClaw's agent tools) is shown
// of a running plugin: its settings in brief and the request log, one function each, so every door
// answers the same. Nothing here holds a payload, a token or a secret.
import type { HooksSnapshot } from '../request/snapshot.ts';
import { REQUESTS_PAGE_MAX, type RequestEntry } from '../request-log/entry.ts';
import type { RequestFilter, RequestLog } from '../request-log/request-log.ts';
import { DEFAULT_REQUESTS_LIMIT } from './requests-route.ts';

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
    /** Requests in the log (hooks.requestLog bounds it). */
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
  const { requests, accepted, refused, duplicates } = plugin.requests.counts();
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
      requests,
      accepted,
      refused,
      duplicates,
      runsQueued: plugin.runs.queued,
      runsRunning: plugin.runs.running,
    },
  };
}

export interface RequestsQuery extends RequestFilter {
  /** 1..1000; default 100. */
  limit?: number;
}

/** Whether a limit is one a page can answer: a whole number from 1 to 1000. */
export function validRequestsLimit(limit: number): boolean {
  return Number.isInteger(limit) && limit >= 1 && limit <= REQUESTS_PAGE_MAX;
}

/** The newest matching requests, oldest first (hookgate_recent). */
export async function recentRequests(log: RequestLog, query: RequestsQuery = {}): Promise<RequestEntry[]> {
  const { limit, ...filter } = query;
  return (await log.page(filter, limit ?? DEFAULT_REQUESTS_LIMIT)).requests;
}
