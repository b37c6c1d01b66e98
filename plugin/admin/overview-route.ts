// `GET overview`: the console's first view in one call, the same in every host: each hook (wake,
// agent, every mapping, and any other name still paused or holding) with its action, how it
// authenticates, paused and held, its requests of the last hour by outcome, its last request and its
// open failures; and the instance: uptime, shared state, runs by state, replies not yet settled.
// Counted from the request log's index, the run book and the failure book: nothing read from disk
// (with hooks.queue the open failures are counted on the queue's Redis, every instance's).
import { refuse } from '../errors.ts';
import type { Outcome } from '../request-log/entry.ts';
import type { RequestLog } from '../request-log/request-log.ts';
import type { RunBook } from '../runs/run-book.ts';
import type { HookPauses } from '../pauses/hook-pauses.ts';
import type { HooksSnapshot } from '../request/snapshot.ts';
import type { AdminCall, AdminRoute } from './admin-call.ts';
import { hooksStatus } from './status-view.ts';

const HOUR_MS = 3_600_000;

export interface OverviewParts {
  snapshot(): HooksSnapshot;
  requests: RequestLog;
  runBook: RunBook;
  /** Open failures by hook: this instance's book, or with hooks.queue the one on Redis. */
  failures: { openByHook(): Map<string, number> | Promise<Map<string, number>> };
  pauses: HookPauses;
  runs: { readonly queued: number; readonly running: number };
  replies: { readonly pending: number };
  /** undefined: no shared state configured. */
  sharedStateUp(): boolean | undefined;
  startedAt: number;
}

export interface HookOverview {
  name: string;
  /** wake, agent, or the mapping's action; "unknown" for a name only a pause or held actions keep. */
  action: string;
  /** "hook token" or "<scheme> signature". */
  auth: string;
  paused: boolean;
  held: number;
  lastHour: Record<Outcome, number>;
  lastRequestAt?: string;
  openFailures: number;
}

export function overviewRoute(parts: OverviewParts): AdminRoute {
  return (call: AdminCall) => {
    if (call.parts.length !== 1 || call.parts[0] !== 'overview') return undefined;
    if (call.method !== 'GET') return Promise.reject(refuse.methodNotAllowed('GET', 'the overview is read with GET'));
    // Counted once the request log on disk is read back after a start; held counts as Redis has them.
    return Promise.all([parts.requests.loaded(), parts.pauses.refresh()]).then(async () =>
      overview(parts, await parts.failures.openByHook()),
    );
  };
}

function overview(p: OverviewParts, open: Map<string, number>): unknown {
  const now = Date.now();
  const status = hooksStatus({ snapshot: p.snapshot, requests: p.requests, runs: p.runs });
  const byHook = p.requests.recentByHook(now - HOUR_MS);
  // `open`: under the hook that accepted the run (an /agent run named "Nightly" counts as `agent`).
  const configured = new Map(status.hooks.map((h) => [h.id, h]));
  const hooks: HookOverview[] = p.pauses.list().map(({ name, paused, held }) => {
    const hook = configured.get(name);
    const requests = byHook.get(name);
    const view: HookOverview = {
      name,
      action: hook?.action ?? 'unknown',
      auth: hook?.admittedBy ?? 'unknown',
      paused,
      held,
      lastHour: requests?.outcomes ?? { '2xx': 0, '4xx': 0, '5xx': 0, duplicate: 0, held: 0, ignored: 0 },
      openFailures: open.get(name) ?? 0,
    };
    if (requests) view.lastRequestAt = new Date(requests.lastAtMs).toISOString();
    return view;
  });
  const up = p.sharedStateUp();
  return {
    instance: {
      startedAt: new Date(p.startedAt).toISOString(),
      uptimeSeconds: Math.floor((now - p.startedAt) / 1000),
      sharedState: up === undefined ? 'off' : up ? 'up' : 'down',
      runs: { running: p.runs.running, queued: p.runs.queued, retrying: p.runBook.count('retrying') },
      pendingDeliveries: p.replies.pending,
    },
    hooks,
  };
}
