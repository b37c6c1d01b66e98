// createHooksPlugin(host): the host-agnostic webhook ingress. The host routes HTTP requests to
// handle(); the plugin answers the ones under hooks.path and leaves the rest alone. Everything a
// request needs (limiter, run service, transform workers, answer batch, body deadlines) is owned by
// the plugin instance, so two instances in one process share nothing.
import path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError } from './errors.ts';
import type { GatewayHost } from './host.ts';
import { changedKeys, loadConfig, type LoadedConfig } from './config/load-snapshot.ts';
import type { HooksSnapshot } from './request/snapshot.ts';
import { watchConfig, type ConfigWatcher, type WatchChange } from './config/watch.ts';
import { AuthFailureLimiter } from './auth/limiter.ts';
import { RunService } from './runs/run-service.ts';
import { ActionExecutor } from './actions/execute.ts';
import { AnswerBatch } from './http/answers.ts';
import { BodyReceiver } from './http/body.ts';
import { HookLifecycle, type HandleOptions } from './request/lifecycle.ts';
import { RefusalLog } from './http/refusal-log.ts';
import { LimitedWarnings } from './observe/limited-warnings.ts';
import { TransformRunner } from './transforms/index.ts';
import { DedupeKeys } from './dedupe/dedupe-keys.ts';
import { Actor } from './request/act.ts';
import { createMetrics, type HookMetrics } from './observe/metrics.ts';
import { RequestLog } from './request-log/request-log.ts';
import { SharedAuthLimiter } from './auth/shared-limiter.ts';
import { HookRateLimiter, type HookRateLimit } from './auth/hook-rate-limit.ts';
import { SharedRateLimits } from './auth/shared-rate-limit.ts';
import { SharedDedupe } from './dedupe/shared-dedupe.ts';
import { SharedBudgets } from './budgets/shared-budgets.ts';
import type { AdminCall } from './admin/admin-call.ts';
import { adminRoutes } from './admin/routes.ts';
import { RunRetries } from './runs/run-retries.ts';
import { SessionRetention } from './runs/session-retention.ts';
import { HookPauses } from './pauses/hook-pauses.ts';
import { SharedPauses } from './pauses/shared-pauses.ts';
import { hooksRoute } from './admin/hooks-route.ts';
import { requestsRoute } from './admin/requests-route.ts';
import { runsRoute } from './admin/runs-route.ts';
import { askRoute } from './admin/ask-route.ts';
import { overviewRoute } from './admin/overview-route.ts';
import { hookSettingsRoute } from './admin/hook-settings.ts';
import { RunBook, type RunSummary } from './runs/run-book.ts';
import { SharedRunStates } from './runs/shared-run-states.ts';
import { openFailures } from './admin/failure-setup.ts';
import { ReplyQueue } from './replies/reply-queue.ts';
import { RunWaiters } from './runs/waiters.ts';
import { BudgetBook } from './budgets/budget-book.ts';
import { RunBatches } from './actions/run-batches.ts';
import { ActionDoor, QueuedActionTaker, sharedRetries } from './actions/queued-actions.ts';
import { takerName } from './queue/taker-name.ts';
import { splitOnceMarks } from './util/once-marks.ts';

export interface HooksPluginOptions {
  /** Follow changes of the config file and the transforms dir (hot reload). */
  watch?: boolean;
  /** Count requests, runs, transforms and reloads for /metrics (default true). */
  metrics?: boolean;
  /**
   * With hooks.queue: "ingress" only adds to the queue (a door); "assistant" (the default) adds what
   * it accepts and takes from the queue too.
   */
  queueRole?: 'ingress' | 'assistant';
}

export type ReloadResult = { ok: true; changed: string[] } | { ok: false; error: ConfigError };

export interface HooksPlugin {
  /** Answers requests under hooks.path and resolves true once the answer is out; false for anything else. */
  handle(req: IncomingMessage, res: ServerResponse, options?: HandleOptions): Promise<boolean>;
  /** Re-reads the config file. A bad config keeps the last good one and is returned (and logged). */
  reload(): Promise<ReloadResult>;
  /** The snapshot new requests see. */
  snapshot(): HooksSnapshot;
  /** Resolves once the watcher (if any) reports changes. */
  watching(): Promise<void>;
  /** Stops watching and taking runs, lets running ones finish for up to graceMs, interrupts the rest. */
  close(graceMs?: number): Promise<void>;
  /** Answers every request waiting for its runs now, with what is known: a shutdown does not wait for them. */
  stopWaiting(): void;
  readonly runs: {
    readonly queued: number;
    readonly running: number;
    /** Whether the run was in the core's retry schedule at start: the core finishes it, the host must not. */
    tookBack(runId: string): boolean;
  };
  readonly limiter: AuthFailureLimiter;
  /**
   * The lockout the hooks count failed authentications in (shared on Redis with hooks.sharedState):
   * the console's login counts a wrong gateway token here, like a wrong hook token.
   */
  readonly lockout: { lockedFor(client: string): number; failed(client: string): void };
  /** The rate limits per hook: what each hook admitted in its window (with shared state, everyone's known). */
  readonly rateLimits: HookRateLimiter;
  /** This instance's metrics: /metrics shows them; hosts add their own events (their outbox, a watcher, shared state). */
  readonly metrics: HookMetrics;
  /** The last hook requests (GET /api/requests). */
  readonly requests: RequestLog;
  /** Whether state shared with other instances (hooks.sharedState) is in use; undefined when not configured. */
  readonly sharedStateUp: boolean | undefined;
  /**
   * The core's admin routes (failures, replay, pause): the host authenticates the caller, then asks
   * here before its own routes. Undefined: not a path of the core's.
   */
  admin(call: AdminCall): Promise<unknown> | undefined;
  /** The reply queue: replies not yet settled (pending or retrying). */
  readonly replies: { readonly pending: number };
  /** Requests past their budget kept for digests not yet told. */
  readonly budgets: { readonly digestsWaiting: number };
  /** What the run book knows of a run (hook, request, delivery): a host adds it to its own run view. */
  runSummary(runId: string): RunSummary | undefined;
  /**
   * With the queue on Redis (hooks.queue): a run's state as its taker (or, while queued, its door)
   * last wrote it there; a host answers it for a run it does not know itself.
   */
  sharedRun(runId: string): Promise<RunSummary | undefined>;
}

/** Throws ConfigError (naming the key) when the config cannot start. */
export async function createHooksPlugin(host: GatewayHost, options: HooksPluginOptions = {}): Promise<HooksPlugin> {
  const startedAt = Date.now();
  let loaded: LoadedConfig = await loadConfig(host);
  loaded.applyHostConfig();
  let current = loaded.snapshot;
  const metrics = createMetrics(options.metrics ?? true);
  const requests = await RequestLog.open(
    host.stateDir && path.join(host.stateDir, 'requests'),
    host.logger,
    () => current.requestLog,
  );
  metrics.observeGauge('request_log_loading', () => (requests.loading ? 1 : 0));
  const limiter = new AuthFailureLimiter();
  const replies = await ReplyQueue.open({
    host,
    file: host.stateDir && path.join(host.stateDir, 'deliveries.jsonl'),
    retry: () => current.retry,
    metrics,
  });
  const runRetries = await RunRetries.open(host.stateDir, host.logger, host.fileSync);
  const runs = new RunService(host, () => current, runRetries, replies, metrics);
  // Before anything can start a run: the book sees every run from its acceptance.
  const runBook = new RunBook();
  // The runs the last process left (a host that keeps them): the list survives a restart.
  runBook.restore((await host.runs.history?.()) ?? []);
  runs.onUpdate((job, status, update) => runBook.note(job, status, update));
  runs.onFinal((final) => runBook.final(final));
  metrics.observeGauge('run_queue_depth', () => runs.queued);
  metrics.observeGauge('runs_running', () => runs.running);
  const budgets = await BudgetBook.open(host, () => current, metrics);
  // The tokens a run reported count toward the budgets its hook meets.
  runs.onFinal((final) => {
    if (final.tokens !== undefined && final.run.hookId !== undefined) budgets.spend(final.run.hookId, final.tokens);
  });
  metrics.observeBudgets(() => budgets.allUse());
  metrics.observeGauge('budget_digests_waiting', () => budgets.digests.waiting);
  const pauses = await HookPauses.open(host, runs, () => current, budgets);
  metrics.observeGauge('held_actions', () => pauses.heldCount);
  const batches = await RunBatches.open(
    host,
    runs,
    () => current,
    budgets,
    () => ({
      hold: (hook, requestId, spec, mark) => pauses.hold(hook, requestId, { wakes: [], runs: [spec] }, mark),
    }),
    metrics,
  );
  metrics.observeGauge('batched_requests_waiting', () => batches.waiting);
  // A waited run is followed until it ends: at most as many as the run queue and the running slots hold.
  const waiters = new RunWaiters(() => current.maxQueuedRuns + current.maxConcurrentRuns);
  runs.onFinal((final) => waiters.told(final));
  const retention = await SessionRetention.open(host, () => current);
  runs.onFinal((final) => retention.runEnded(final.run));
  metrics.observeGauge('requests_waiting', () => waiters.waiting);
  const transforms = new TransformRunner({
    timeoutMs: current.transformTimeoutMs,
    logger: host.logger,
    events: metrics,
  });
  const refusals = new RefusalLog(host.logger);
  // Lockouts can be caused by anyone (from many addresses): their warnings are rate-limited.
  const strangerWarnings = new LimitedWarnings(host.logger);
  const bodies = new BodyReceiver();
  const dedupe = new DedupeKeys(() => current.dedupe, host.logger);
  // The core's own marks (a digest told, a batch run) are not requests' keys: they go to the budgets
  // and the batches, which drop what an earlier process had handed over before it could forget it.
  const { marks, keys } = splitOnceMarks(host.idempotency ? await host.idempotency.restore(current.dedupe) : []);
  dedupe.restore(keys);
  // A held request's key is kept with its held action until the resume hands it to the host (a
  // held batch's mark too).
  const held = splitOnceMarks(pauses.held.keys());
  dedupe.restore(held.keys);
  const restored = await host.runs.restore?.();
  // Lockouts and dedupe keys shared with other instances; read at start only.
  const sharedState = current.sharedState;
  // The Redis client is loaded only when configured: it is a large part of the gateway's memory.
  const shared =
    sharedState &&
    new (await import('./redis/shared-redis.ts')).SharedRedis(
      sharedState,
      host.logger,
      (up) => metrics.sharedStateUp(up),
      // On the queue's own Redis, the queue says each outage (once for both).
      sharedState.url !== current.queue?.url,
    );
  const requestLimiter = shared ? new SharedAuthLimiter(limiter, shared, strangerWarnings) : limiter;
  const rateLimits = new HookRateLimiter();
  const sharedRateLimits = shared && new SharedRateLimits(rateLimits, shared, () => rateLimitsOf(current));
  const sharedDedupe = shared && new SharedDedupe(shared, host.logger);
  const sharedPauses = shared && new SharedPauses(shared, pauses.pauses, host.logger);
  const sharedBudgets = shared && new SharedBudgets(budgets.sharedWindows, shared, () => budgets.keys());
  await shared?.connect();
  // The queue on Redis (hooks.queue), its client loaded only when configured.
  const queue = current.queue && new (await import('./queue/action-queue.ts')).ActionQueue(current.queue, host.logger);
  await queue?.connect();
  // Run states on the queue's Redis: every instance answers a run's state (runs/shared-run-states.ts).
  const sharedRuns = queue && new SharedRunStates(queue);
  if (sharedRuns) {
    // After the run book's own listeners: its summary is what is written.
    runs.onUpdate((job) => sharedRuns.noted(runBook.get(job.runId)));
    runs.onFinal((final) => {
      const { runId } = final.run;
      sharedRuns.noted(runBook.get(runId));
      if (final.delivery instanceof Promise)
        final.delivery.then(
          () => sharedRuns.noted(runBook.get(runId)),
          () => {},
        );
    });
  }
  // With the queue, held actions live beside it in Redis, shared by every instance, and runs wait
  // for their next try there too, where any taker finds them when due.
  if (queue) {
    pauses.useQueue(queue.held());
    runRetries.share(sharedRetries(queue.retries()));
  }
  const door =
    queue &&
    new ActionDoor(
      queue,
      () => current,
      (hook, requestId, jobs) => sharedRuns?.queued(hook, requestId, jobs),
    );
  const executor = new ActionExecutor(host, runs, waiters, pauses, budgets, batches, door);
  const actor = new Actor({
    dedupe,
    executor,
    transforms,
    logger: host.logger,
    shared: sharedDedupe,
    waiters,
  });
  const lifecycle = new HookLifecycle({
    host,
    limiter: requestLimiter,
    rateLimits,
    refusals,
    warnings: strangerWarnings,
    actor,
    answers: new AnswerBatch(),
    bodies,
    metrics,
    requests,
  });

  // One reload at a time; a change arriving meanwhile gives one more reload after it.
  let reloading: Promise<ReloadResult> | undefined;
  let again = false;
  const reloadOnce = async (): Promise<ReloadResult> => {
    let next: LoadedConfig;
    try {
      next = await loadConfig(host);
    } catch (err) {
      const error = err instanceof ConfigError ? err : new ConfigError([String(err)], host.configPath);
      metrics.reload(false);
      return { ok: false, error };
    }
    const changed = changedKeys(loaded.selected, next.selected);
    loaded = next;
    next.applyHostConfig();
    if (JSON.stringify(next.snapshot.sharedState) !== JSON.stringify(sharedState)) {
      host.logger.warn(`${next.selected.hooksKey}.sharedState changed: it takes effect at the next start`);
    }
    const before = current;
    current = next.snapshot;
    // A rotation: what the new config accepts is forgiven, what it retired is refused uncounted for a while.
    if (!before.credentials.sameAs(current.credentials)) {
      requestLimiter.rotate(
        current.credentials.values(),
        before.credentials.retiredBy(current.credentials),
        current.authRateLimit,
      );
    }
    transforms.setTimeoutMs(current.transformTimeoutMs);
    metrics.reload(true);
    return { ok: true, changed };
  };
  const reload = (): Promise<ReloadResult> => {
    if (reloading) {
      again = true;
      return reloading;
    }
    reloading = reloadOnce().finally(() => {
      reloading = undefined;
      if (again) {
        again = false;
        void reload();
      }
    });
    return reloading;
  };

  const onChange = async (change: WatchChange): Promise<void> => {
    // A changed module is loaded afresh by its next call.
    if (change.transforms.length) transforms.invalidate();
    const result = await reload();
    const transformsChanged = change.transforms.join(', ') || undefined;
    if (result.ok) {
      host.logger.info('config reloaded', {
        changed: result.changed.join(', ') || 'nothing',
        transforms: transformsChanged,
      });
    } else {
      host.logger.error('config reload refused; the last good config stays in force', {
        reason: result.error.withoutValues(),
        transforms: transformsChanged,
      });
    }
  };

  // Before the restored runs resume: their outcomes are followed too. Before the watcher: a state
  // file that cannot be opened fails the start, and a watcher already running would keep the
  // process alive, neither listening nor exiting.
  const failures = await openFailures(
    host,
    runs,
    replies,
    () => current,
    metrics,
    queue && door ? { records: queue, door } : undefined,
  );

  let watcher: ConfigWatcher | undefined;
  if (options.watch) {
    watcher = watchConfig({
      configPath: host.configPath,
      transformsRoot: current.transformsRoot,
      logger: host.logger,
      onChange: (change) => void onChange(change),
    });
  }

  runs.resume(restored?.rerun ?? [], restored?.interrupted ?? []);
  const resumedReplies = replies.resume();
  if (resumedReplies) host.logger.info('deliveries left by the last stop resumed', { count: resumedReplies });
  pauses.start();
  // Read before budgets.start removes digests an earlier process had told.
  const digestedBatches = budgets.digests.batches();
  budgets.start(marks.digests);
  if (queue && options.queueRole !== 'ingress') {
    const taker = new QueuedActionTaker(executor, dedupe, () => current, host.logger, runs, failures.outlets);
    queue.take(await takerName(host.stateDir), (entry) => taker.act(entry));
  }
  // A batch whose run the host handed back (or marked) was accepted before the stop: it runs (or
  // ended) as that run. One held or digested (its mark kept with the held action or the digest) is
  // there already.
  batches.start(
    new Set([
      ...[...(restored?.rerun ?? []), ...(restored?.interrupted ?? [])].map((r) => r.runId),
      ...marks.batches,
      ...held.marks.batches,
      ...digestedBatches,
    ]),
  );
  const setPaused = async (hook: string, paused: boolean): Promise<void> => {
    if (sharedPauses) await sharedPauses.set(hook, paused);
    else await pauses.pauses.set(hook, paused);
  };
  const overview = overviewRoute({
    snapshot: () => current,
    requests,
    runBook,
    failures,
    pauses,
    runs,
    replies,
    sharedStateUp: () => shared?.up,
    startedAt,
  });
  const admin = adminRoutes([
    hooksRoute(pauses, setPaused, budgets),
    hookSettingsRoute({
      snapshot: () => current,
      pauses,
      hooksBlock: () => (loaded.selected.hooks ?? {}) as Record<string, unknown>,
    }),
    askRoute(failures.lookup, host),
    failures.route,
    requestsRoute(requests),
    runsRoute(runBook, sharedRuns),
    overview,
  ]);

  return {
    // Each request reads `current` once, so a swap never changes the config under a request in flight.
    handle: (req, res, options) => lifecycle.handle(req, res, current, options),
    reload,
    snapshot: () => current,
    watching: () => watcher?.ready ?? Promise.resolve(),
    async close(graceMs = 5000) {
      const deadline = Date.now() + graceMs;
      await watcher?.close();
      // Nothing more is taken; the action being carried out is confirmed first. The connection stays
      // for the runs' last states and the failures' pushes.
      runs.stopTaking();
      await queue?.stopTaking();
      waiters.stop();
      await pauses.close();
      await batches.close();
      await runs.close(graceMs);
      // After the runs: the last ones' tokens are counted.
      sharedBudgets?.close();
      await budgets.close();
      // Replies the last runs queued get what is left of the grace.
      await replies.close(deadline - Date.now());
      await failures.close();
      await retention.close();
      await transforms.close();
      await requests.close();
      bodies.close();
      refusals.flush();
      strangerWarnings.flush();
      sharedRateLimits?.close();
      await queue?.close();
      shared?.close();
    },
    stopWaiting: () => waiters.stop(),
    runs,
    limiter,
    lockout: {
      lockedFor: (client) => requestLimiter.lockedFor(client),
      failed(client) {
        const lockSeconds = requestLimiter.recordFailure(client, current.authRateLimit);
        metrics.authFailure();
        if (lockSeconds > 0) {
          metrics.addressLocked();
          strangerWarnings.warn('client address locked after repeated authentication failures', {
            client,
            seconds: lockSeconds,
          });
        }
      },
    },
    rateLimits,
    metrics,
    requests,
    get sharedStateUp() {
      return shared?.up;
    },
    admin,
    replies,
    budgets: {
      get digestsWaiting() {
        return budgets.digests.waiting;
      },
    },
    runSummary: (runId) => runBook.get(runId),
    sharedRun: async (runId) => (sharedRuns ? sharedRuns.get(runId) : undefined),
  };
}

/** Every rate limit of a config: wake's, agent's and each mapping's. */
function* rateLimitsOf(snap: HooksSnapshot): Iterable<HookRateLimit> {
  const { wake, agent } = snap.endpointRateLimits;
  if (wake) yield wake;
  if (agent) yield agent;
  for (const m of snap.mappings) if (m.rateLimit) yield m.rateLimit;
}
