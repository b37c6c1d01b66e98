// The standalone gateway behind `npm start`: one HTTP server carrying the hooks plugin and the
// admin API, a session store, heartbeats, an agent runner and a durable outbox under the state dir.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { dryRunRoute } from '../../../kits/dry-run.ts';
import type { AddressInfo } from 'node:net';
import { link, mkdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { answerClientError, answerExpectation } from '../../../kits/node-http.ts';
import { ConfigError, createHooksPlugin, refuse, writeError, type HooksPlugin } from '../../../host-kit.ts';
import { readConfigFile } from '../../../kits/config.ts';
import type { ChannelName, GatewayHost, Logger, Route, RunRecord } from '../../../host.ts';
import {
  gatewaySecrets,
  hostAgents,
  localUrl,
  resolveGatewaySettings,
  type GatewayRole,
  type GatewaySettings,
} from './settings.ts';
import { agentIdOfKey, Storage, type RunRegistry } from '../storage/index.ts';
import { AgentRunner } from './agent-runner.ts';
import { Heartbeats } from './heartbeat.ts';
import { AdminApi } from './admin-api.ts';
import { ConsoleDoor } from '../../../kits/console.ts';
import { ConnectionLimit } from './connection-limit.ts';
import { planGatewayGmail, type GatewayGmail } from './gateway-gmail.ts';
import { ChannelReplies } from './channel-replies.ts';
import { gatewayMetrics, type GatewayMetrics } from './gateway-metrics.ts';
import { errnoCode, errorMessage } from '../../../util/errors.ts';
import { timerDelay } from '../../../util/time-bounds.ts';

export interface GatewayOptions {
  configPath: string;
  stateDir: string;
  /** Overrides gateway.port (0 = any free port). */
  port?: number;
  /** Overrides gateway.bind. */
  host?: string;
  logger: Logger;
  /** Run the Gmail watcher when hooks.gmail.account is set (default true; `--no-gmail` turns it off). */
  gmail?: boolean;
  /** Overrides gateway.role (`--role`). */
  role?: GatewayRole;
}

export interface RunningGateway {
  url: string;
  port: number;
  host: string;
  settings: GatewaySettings;
  plugin: HooksPlugin;
  close(): Promise<void>;
}

/** Where the console (the owner's web page) answers on the gateway's port. */
const CONSOLE_MOUNT = '/ui/';
const mainSessionKey = (agentId: string): string => `agent:${agentId}:main`;
/** Pending system events that trigger a heartbeat before the periodic one. */
const BACKLOG_EVENTS = 100;

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const { logger } = opts;
  const file = await readConfigFile(opts.configPath);
  let settings = resolveGatewaySettings(file, opts.configPath);
  // hooks.gmail is checked before anything starts; the watcher itself starts once the gateway listens.
  const startGmail = await planGatewayGmail({
    file,
    settings,
    configPath: opts.configPath,
    stateDir: opts.stateDir,
    snapshot: () => plugin.snapshot(),
    run: opts.gmail !== false,
    logger,
  });

  // Everything the gateway writes lives under data/: the config's folder is watched, and writes
  // beside the config file would wake the watcher on every request.
  const dataDir = path.join(opts.stateDir, 'data');
  const storage = new Storage(dataDir, settings.storage, logger);
  const { store, outbox, runs: registry } = storage;
  const interrupted = await storage.open();
  const cutOff = new Set(interrupted.map((run) => run.runId));
  await moveUnsettledReplies(dataDir, logger);

  const runner = new AgentRunner(() => ({ defaultModel: settings.defaultModel, providers: settings.providers }));
  const heartbeats = new Heartbeats({
    store,
    runner,
    logger,
    mainSessionKey,
    agentIds: () => settings.agents.map((a) => a.id),
    turnTimeoutMs: () => (settings.timeoutSeconds ?? 600) * 1000,
  });

  const lastRoute = (agentId: string): Route | undefined => {
    const last = outbox.lastRoute(agentId);
    if (last && settings.channels.includes(last.channel as ChannelName)) {
      return { channel: last.channel as ChannelName, to: last.to };
    }
    const first = settings.channels[0];
    return first ? { channel: first, to: settings.channelDefaults[first] } : undefined;
  };

  // Channel senders live as long as their config block: their pacers must see every send to a platform.
  let metrics: GatewayMetrics | undefined;
  const replies = new ChannelReplies({
    outbox,
    metrics: () => metrics,
    channels: settings.senders,
    defaultTo: (channel) => settings.channelDefaults[channel],
  });

  const host: GatewayHost = {
    logger,
    configPath: opts.configPath,
    configDir: path.dirname(opts.configPath),
    stateDir: path.join(dataDir, 'after'),
    // Held actions, batches and digests are answered once written: storage.fsync applies to them too.
    fileSync: storage.fileSync,
    agents: hostAgents(settings),
    channels: settings.channels,
    sessions: {
      mainSessionKey,
      async enqueueSystemEvent(sessionKey, text, meta) {
        // An idempotency key goes in the event's own line: a crash keeps both or neither.
        await store.append(sessionKey, {
          kind: 'system-event',
          text,
          hook: meta.hook,
          ...(meta.runId ? { runId: meta.runId } : {}),
          ...(meta.idempotency ? { idem: meta.idempotency } : {}),
        });
        // Events waiting for the next heartbeat are held in memory: a long backlog drains early.
        if (store.pendingCount(sessionKey) >= BACKLOG_EVENTS) heartbeats.request(agentIdOfKey(sessionKey), 'backlog');
      },
      requestHeartbeat: ({ agentId, reason }) => heartbeats.request(agentId, reason),
      lastRoute,
      // A run's own hook session, long after its run (hooks.sessionRetention): its file goes.
      deleteSession: (sessionKey) => store.delete(sessionKey),
    },
    runs: {
      async runIsolatedTurn(turn) {
        // Neither the model nor the run's slot waits for the history: the log keeps order, and the
        // run's summary, written after the reply, is what the run waits for (JsonlLog logs failures).
        store.write(turn.sessionKey, { kind: 'prompt', text: turn.prompt, runId: turn.runId });
        // The turn itself, not a copy: its signal is made only if the model is one that can be aborted.
        const outcome = await runner.run(turn);
        const reply =
          outcome.status === 'ok'
            ? { kind: 'reply' as const, text: outcome.reply, runId: turn.runId }
            : { kind: 'reply' as const, text: '', runId: turn.runId, error: outcome.error };
        store.write(turn.sessionKey, reply);
        // A failure says whether it may pass (retryable, Retry-After): the core decides on a retry.
        return outcome;
      },
      onRunUpdate: (record) => registry.update(record),
      // The runs the session files still hold: the runs list survives a restart. One the last stop
      // cut off is listed as the error reportInterrupted records for it below; one waiting for a
      // retry is the core's, which lists it as it goes on.
      history: async () =>
        registry
          .history()
          .map((run) =>
            cutOff.has(run.runId) && run.status !== 'retrying' ? { ...run, status: 'error', error: INTERRUPTED } : run,
          ),
    },
    idempotency: { restore: async () => storage.takeIdempotencyRecords() },
    replies,
    secrets: () => gatewaySecrets(settings),
  };

  /** The gateway's own keys are part of every reload: checked with the hooks block, applied with it. */
  host.checkConfig = (next: Record<string, unknown>): (() => void) => {
    const fresh = resolveGatewaySettings(next, opts.configPath);
    return () => applySettings(fresh);
  };
  let started = false;
  const applySettings = (fresh: GatewaySettings): void => {
    if (!started) return;
    if (fresh.port !== settings.port || fresh.bind !== settings.bind) {
      logger.warn('gateway.port and gateway.bind changes apply at the next start');
    }
    if (JSON.stringify(fresh.storage) !== JSON.stringify(settings.storage))
      logger.warn('storage changes apply at the next start');
    if (fresh.channelsText !== settings.channelsText) {
      const changed = replies.useChannels(fresh.senders);
      if (changed.length) logger.info('channels reloaded', { changed: changed.join(', ') });
    }
    if (fresh.heartbeatSeconds !== settings.heartbeatSeconds) heartbeats.startPeriodic(fresh.heartbeatSeconds);
    settings = fresh;
    host.agents = hostAgents(settings);
    host.channels = settings.channels;
  };

  const role = opts.role ?? settings.role;
  const plugin = await createHooksPlugin(host, { watch: true, metrics: settings.metrics.enabled, queueRole: role });
  if (role === 'ingress' && !plugin.snapshot().queue) {
    await plugin.close(0);
    throw new ConfigError(
      ['gateway.role "ingress" (a door) needs hooks.queue: a door queues every action'],
      opts.configPath,
    );
  }
  metrics = gatewayMetrics(plugin.metrics.registry, {
    outboxSize: () => outbox.appended,
    deliveriesPending: () => plugin.replies.pending,
  });
  started = true;
  await plugin.watching();
  // A run in the core's retry schedule is the core's to finish (its retry, or its cut-off try).
  await reportInterrupted(
    interrupted.filter((run) => !plugin.runs.tookBack(run.runId)),
    host,
    registry,
  );
  const dryRuns = dryRunRoute(plugin, host);
  const admin = new AdminApi({
    gatewayToken: () => settings.gatewayToken,
    trustedProxies: () => plugin.snapshot().trustedProxies,
    store,
    outbox,
    runs: registry,
    gmail: async () => gmail?.status(),
    metrics: plugin.metrics,
    metricsPublic: () => settings.metrics.public,
    runSummary: (runId) => plugin.runSummary(runId),
    sharedRun: (runId) => plugin.sharedRun(runId),
    core: (call) => plugin.admin(call) ?? dryRuns(call),
  });
  // The owner's web page at /ui/: its data calls are the admin API's, behind the console's session.
  const consoleDoor = new ConsoleDoor({
    mount: CONSOLE_MOUNT,
    settings: () => plugin.snapshot().console,
    ownerToken: () => plugin.snapshot().ownerToken,
    trustedProxies: () => plugin.snapshot().trustedProxies,
    lockout: plugin.lockout,
    api: (req, res, rest) => admin.handleForConsole(req, res, rest),
    logger,
  });
  let gmail: GatewayGmail | undefined;

  // Timeouts are checked every second (Node's default is every 30 s, which lets slow headers linger).
  // The Host check is ours (Node's own answers without a body): HTTP/1.1 requires the header.
  const serve = (req: IncomingMessage, res: ServerResponse, expectsContinue = false): void => {
    route(req, res, expectsContinue).catch((err: unknown) => {
      logger.error('request failed', { reason: errorMessage(err) });
      writeError(res, refuse.internal());
    });
  };
  const server = createServer({ connectionsCheckingInterval: 1000, requireHostHeader: false }, (req, res) =>
    serve(req, res),
  );
  // A client that half-closes after sending its request (shutdown of its write side) still gets the
  // answer, which for a wake comes only after the event is on disk. By default Node ends such a socket
  // at once, so the sender never learns that its request was taken, and sends it again. The property
  // is undocumented but long-standing; a test fails if Node drops it.
  (server as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  new ConnectionLimit(
    server,
    () => settings.connections,
    (ip) => plugin.snapshot().trustedProxies?.contains(ip) === true,
    (count) => logger.warn('connections refused over gateway.maxConnections or the per-address share', { count }),
  );
  server.on('clientError', answerClientError);
  server.on('checkExpectation', answerExpectation);
  // "Expect: 100-continue": the hooks send the 100 only once a request may upload its body.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => serve(req, res, true));
  const route = async (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): Promise<void> => {
    if (req.headers.host === undefined && req.httpVersion === '1.1') {
      writeError(res, refuse.badRequest('HTTP/1.1 requests need a Host header', { connection: 'close' }));
      return;
    }
    if (await plugin.handle(req, res, { expectsContinue })) return;
    // The admin API decides nothing before a body: Node's own behaviour, the 100 at once.
    if (expectsContinue) res.writeContinue();
    if (await admin.handle(req, res)) return;
    if (await consoleDoor.handle(req, res)) return;
    writeError(res, refuse.notFound('not found'));
  };
  // Slow clients: headers must arrive within 10 s; the hooks body reader has its own timeout.
  server.headersTimeout = 10_000;
  // It bounds receiving a request, not answering it: a waited answer (hooks.maxWaitSeconds, up to an
  // hour) after a complete request is not cut.
  server.requestTimeout = 120_000;
  server.keepAliveTimeout = 5_000;

  const bindHost = opts.host ?? settings.bind;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? settings.port, bindHost, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    // A port taken: what started (the config watcher, timers, open files) is stopped, so an
    // embedding process is not kept alive by a gateway that never listened.
    await plugin.close(0);
    await storage.close();
    throw err;
  }
  server.on('error', (err) => logger.error('server error', { reason: err.message }));
  heartbeats.startPeriodic(settings.heartbeatSeconds);
  const { port } = server.address() as AddressInfo;
  const urlHost = bindHost.includes(':') ? `[${bindHost}]` : bindHost;
  gmail = await startGmail?.(localUrl(bindHost, port), {
    notifications: (count) => metrics.gmailNotifications(count),
    error: (stage) => metrics.gmailError(stage),
  });

  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    host: bindHost,
    get settings() {
      return settings;
    },
    plugin,
    close() {
      closing ??= (async () => {
        // One grace for the whole stop, whatever a peer does: every outbound call ends when aborted.
        const deadline = Date.now() + settings.shutdownGraceMs;
        await gmail?.stop();
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        plugin.stopWaiting(); // requests waiting for their runs are answered now, not at their bound
        // In-flight requests are answered first; one still unanswered at the deadline (a sender
        // trickling its body) has its connection closed.
        const cut = setTimeout(() => server.closeAllConnections(), timerDelay(deadline - Date.now()));
        await stopped;
        clearTimeout(cut);
        await plugin.close(Math.max(0, deadline - Date.now()));
        await heartbeats.stop();
        await storage.close();
      })();
      return closing;
    },
  };
}

/** Runs the previous process accepted but never finished: record them and tell the main session. */
const INTERRUPTED = 'interrupted: the gateway stopped before the run finished';

async function reportInterrupted(runs: RunRecord[], host: GatewayHost, registry: RunRegistry): Promise<void> {
  const error = INTERRUPTED;
  for (const run of runs) {
    void registry.update({ ...run, status: 'error', error });
    await host.sessions.enqueueSystemEvent(
      host.sessions.mainSessionKey(run.agentId),
      `Hook ${run.name} (error): ${error}`,
      {
        source: 'hook',
        hook: run.name,
        runId: run.runId,
      },
    );
  }
  if (runs.length)
    host.logger.warn('runs interrupted by the last stop were recorded as errors', { count: runs.length });
}

/**
 * Replies not yet settled were kept in data/deliveries.jsonl while the gateway queued them itself;
 * the core's reply queue keeps them in its own state dir (data/after/), where a start takes them up.
 */
async function moveUnsettledReplies(dataDir: string, logger: Logger): Promise<void> {
  const after = path.join(dataDir, 'after');
  await mkdir(after, { recursive: true, mode: 0o700 });
  const old = path.join(dataDir, 'deliveries.jsonl');
  // A link, not a rename: a file already at the new place is never replaced, and the old one stays.
  try {
    await link(old, path.join(after, 'deliveries.jsonl'));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    if (errnoCode(err) !== 'EEXIST') throw err;
    logger.warn('an older unsettled-replies file was left in place: the reply queue keeps its own', { file: old });
    return;
  }
  await unlink(old);
}
