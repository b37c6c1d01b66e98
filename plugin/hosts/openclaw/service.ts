// The running plugin inside OpenClaw, loaded by the service's start (the entry, index.ts, stays light).
// It reads the journals the last process left, starts the core (with its own file watcher), hands
// OpenClaw back what it had not taken in once the gateway is ready, and on stop interrupts what runs
// within OpenClaw's stop budget.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dryRunRoute } from '../../kits/dry-run.ts';
import path from 'node:path';
import { enqueueSystemEvent, peekSystemEventEntries } from 'openclaw/plugin-sdk/infra-runtime';
import { resolveConfigPath } from 'openclaw/plugin-sdk/state-paths';
import {
  createHooksPlugin,
  hooksStatus,
  recentRequests,
  refuse,
  validRequestsLimit,
  writeError,
  type HooksStatus,
  type RequestEntry,
  type RequestsQuery,
} from '../../host-kit.ts';
import { AckJournal } from './ack-journal.ts';
import { answerAdmin, answerAdminCall, openClawAdmin, type AdminAsk } from './admin-api.ts';
import { ConsoleDoor } from '../../kits/console.ts';
import type { OpenClawPluginApi, ServiceContext } from './api.ts';
import { EventHandover, type EventQueue } from './event-handover.ts';
import { builtInHooksWarning } from './builtin-hooks.ts';
import { createOpenClawHost } from './host.ts';
import { CONSOLE_PATH, routePath } from './identity.ts';
import { IdempotencyJournal } from './idempotency-journal.ts';
import { RecentRuns } from './recent-runs.ts';
import { RunHistory } from './run-history.ts';
import { ServiceQueue, type ContextRunner } from './run-queue.ts';

/** OpenClaw gives a plugin service this long to stop when it replaces or disables the plugin. */
export const OPENCLAW_STOP_BUDGET_MS = 5_000;
/** Runs still going at stop get this long; the rest of the budget posts their summaries and closes. */
export const STOP_GRACE_MS = OPENCLAW_STOP_BUDGET_MS - 2_000;

export interface RunningHookgate {
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Everything under /hookgate/api/ (behind OpenClaw's gateway auth). */
  adminHttp(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Everything under /hookgate/ui/: the console, logged in with OpenClaw's gateway token. */
  console(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** One admin call, as the HTTP API makes it: what the agent tools ask. */
  admin: AdminAsk;
  /** GET /hookgate/metrics (behind OpenClaw's gateway auth). */
  metrics(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  status(): HooksStatus;
  recent(query: RequestsQuery): Promise<RequestEntry[]>;
  stop(): Promise<void>;
}

/** 503 while the plugin starts (or could not), with when to try again. */
export function answerUnavailable(res: ServerResponse, failure: string | undefined): true {
  writeError(
    res,
    failure
      ? refuse.overloaded(`hooks unavailable: ${failure}`, { 'retry-after': '30' })
      : refuse.overloaded('hooks are starting', { 'retry-after': '1' }),
  );
  return true;
}

function openClawEvents(api: OpenClawPluginApi): EventQueue {
  return {
    enqueue: (sessionKey, text) => api.runtime.system.enqueueSystemEvent(text, { sessionKey }),
    peek: (sessionKey) => peekSystemEventEntries(sessionKey),
  };
}

/**
 * Starts the plugin. `context` runs work in the service's async context (it carries the authority
 * api.runtime.subagent needs); it is attached only after start returns, as is the hand-over of
 * events, because OpenClaw refuses both while it is still starting the service.
 */
export async function startHookgate(
  api: OpenClawPluginApi,
  ctx: ServiceContext,
  context: ContextRunner,
): Promise<RunningHookgate> {
  const queue = new ServiceQueue();
  const idempotency = new IdempotencyJournal();
  const acks = new AckJournal();
  const configPath = resolveConfigPath(process.env);
  await idempotency.open(ctx.stateDir);
  const pending = await acks.open(ctx.stateDir);
  let handover: EventHandover | undefined;
  const recentRuns = new RecentRuns();
  const runHistory = new RunHistory();
  const stateDir = path.join(ctx.stateDir, 'hookgate', 'after');
  const host = createOpenClawHost({
    api,
    configPath,
    queue,
    journal: idempotency,
    acks,
    events: (event) => handover!.accept(event),
    pending,
    stateDir,
    recentRuns,
    runHistory,
  });
  // Before the plugin starts: its run book takes the runs the last process saw end.
  await runHistory.open(path.join(ctx.stateDir, 'hookgate', 'runs.jsonl'), host.logger);
  handover = new EventHandover(acks, openClawEvents(api), host.logger);
  const clash = builtInHooksWarning(api.config, routePath(api.pluginConfig));
  if (clash) host.logger.warn(clash);
  handover.restore(pending.events);
  const plugin = await createHooksPlugin(host, { watch: true });
  await plugin.watching();
  const snap = plugin.snapshot();
  host.logger.info('hookgate ready', { path: snap.path, enabled: snap.enabled });
  const restored = pending.events.length + pending.runs.length + pending.interrupted.length;
  if (restored)
    host.logger.info('handing OpenClaw back what it had not taken in before it stopped', {
      events: pending.events.length,
      runs: pending.runs.length,
      interrupted: pending.interrupted.length,
    });
  const admin = openClawAdmin(plugin, recentRuns, dryRunRoute(plugin, host));
  // The console's data calls are the admin API's own, behind its session instead of OpenClaw's auth.
  const consoleDoor = new ConsoleDoor({
    mount: `${CONSOLE_PATH}/`,
    settings: () => plugin.snapshot().console,
    ownerToken: () => plugin.snapshot().ownerToken,
    trustedProxies: () => plugin.snapshot().trustedProxies,
    lockout: plugin.lockout,
    api: (req, res, rest) => answerAdminCall(admin, req, res, rest, host.logger),
    logger: host.logger,
  });
  const ready = setTimeout(() => {
    queue.attach(context);
    handover.open();
  }, 0);

  return {
    handle: (req, res) => plugin.handle(req, res),
    adminHttp: (req, res) => answerAdmin(admin, req, res, host.logger),
    async console(req, res) {
      if (await consoleDoor.handle(req, res)) return true;
      writeError(res, refuse.notFound('not found'));
      return true;
    },
    admin,
    async metrics(req, res) {
      if (req.method !== 'GET') {
        writeError(res, refuse.methodNotAllowed('GET', 'metrics are read with GET'));
        return true;
      }
      const { contentType, text } = await plugin.metrics.exposition();
      res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
      res.end(text);
      return true;
    },
    status: () => hooksStatus(plugin),
    async recent(query) {
      if (query.limit !== undefined && !validRequestsLimit(query.limit))
        throw new Error('limit must be a whole number from 1 to 1000');
      return recentRequests(plugin.requests, query);
    },
    async stop() {
      clearTimeout(ready);
      try {
        await plugin.close(STOP_GRACE_MS);
        await runHistory.close();
      } finally {
        queue.detach();
        queue.clear('the hookgate service stopped');
        // A stopping plugin's runtime refuses system events; OpenClaw's queue itself takes the summaries.
        handover.close((sessionKey, text) => enqueueSystemEvent(text, { sessionKey }));
      }
    },
  };
}
