// The plugin's Prometheus metrics: one registry per plugin instance (never prom-client's global
// default, so two instances in one process count apart). Every label value comes from the config
// or from a fixed set (a mapping id, a status code, a scheme name), never from the request path,
// so an attacker cannot grow the series. Event sites call the small methods below; metrics off
// gives NO_METRICS, whose methods do nothing. A host's own events (its outbox, a watcher,
// channel deliveries) are its own series, registered on `registry`.
import { Counter, Gauge, Registry } from 'prom-client';
import { FastCounter, FastHistogram, type CounterSeries, type HistogramSeries } from './fast-series.ts';

/** The endpoint a request counts under: wake, agent, a mapped hook, or a name no mapping owns. */
export type EndpointLabel = 'wake' | 'agent' | 'mapping' | 'unknown';

type GaugeName = keyof typeof GAUGE_HELP;

/** Run statuses a run reports (host.ts RunStatus); anything else counts as 'other'. */
const RUN_STATUSES = new Set(['queued', 'running', 'retrying', 'ok', 'error', 'timeout', 'other']);

/** Why a request was held back at the door (the refusals by their code). */
export type ReinReason = 'ignored' | 'source_not_allowed' | 'hook_rate_limited';

/** What a retry is of: an agent run, or a channel delivery (a host's). */
export type RetryKind = 'run' | 'delivery';

export interface HookMetrics {
  /** A hook request answered: its endpoint, the mapping that owned it ('' when none), status, time and body size. */
  request(endpoint: EndpointLabel, mapping: string, status: number, seconds: number, bodyBytes: number): void;
  authFailure(): void;
  addressLocked(): void;
  signatureFailure(scheme: string): void;
  duplicate(endpoint: EndpointLabel, mapping: string): void;
  /** A request held back at the door: ignored by the filters, refused for its source or its hook's rate limit. */
  reined(endpoint: EndpointLabel, mapping: string, reason: ReinReason): void;
  runStatus(status: string): void;
  /** A failed run or delivery scheduled for another try. */
  retryScheduled(kind: RetryKind): void;
  /** A reply that failed for good on one channel went to the next of its fallback channels. */
  replyFallback(from: string, to: string): void;
  transformCall(ok: boolean): void;
  transformTimeout(): void;
  transformWorkerRestart(): void;
  reload(ok: boolean): void;
  sharedStateUp(up: boolean): void;
  /** A run or delivery recorded as a failure (dead letter), by kind. */
  failure(kind: 'run' | 'delivery'): void;
  /** A failure or run replayed, by kind. */
  replay(kind: 'run' | 'delivery'): void;
  /** A request past its hook's budget kept for the window's digest, by hook. */
  digested(hook: string): void;
  /** A request whose run joined a batch (coalesce), by hook. */
  coalesced(hook: string): void;
  /** Each budget's use in its open window (runs and tokens), read when metrics are scraped. */
  observeBudgets(read: () => Iterable<BudgetGaugeRow>): void;
  /** A gauge read when metrics are scraped (queue depth, runs running). */
  observeGauge(name: GaugeName, read: () => number): void;
  /** Where a host registers its own series; undefined when metrics are off. */
  readonly registry: Registry | undefined;
  /** The exposition in the Prometheus text format, and its content type. */
  exposition(): Promise<{ contentType: string; text: string }>;
}

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BODY_BUCKETS = [0, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];

/** One budget's use: `hook:<id>` names a hook's own budget, `hooks` the budget of all hooks. */
export interface BudgetGaugeRow {
  budget: string;
  runs: number;
  tokens: number;
}

/** The series of one endpoint and mapping. */
interface Children {
  byStatus: Map<number, CounterSeries>;
  duration: HistogramSeries;
  bodies: HistogramSeries;
  duplicates: CounterSeries | undefined;
}

class PromMetrics implements HookMetrics {
  readonly #registry = new Registry();
  get registry(): Registry {
    return this.#registry;
  }
  readonly #requests = new FastCounter(
    'hookgate_requests_total',
    'Hook requests answered, by endpoint, mapping id and HTTP status.',
    ['endpoint', 'mapping', 'status'],
    this.#registry,
  );
  readonly #duration = new FastHistogram(
    'hookgate_request_duration_seconds',
    'Time from the request head to the answer written, by endpoint and mapping id.',
    ['endpoint', 'mapping'],
    DURATION_BUCKETS,
    this.#registry,
  );
  readonly #bodies = new FastHistogram(
    'hookgate_request_body_bytes',
    'Body bytes received per hook request, by endpoint and mapping id.',
    ['endpoint', 'mapping'],
    BODY_BUCKETS,
    this.#registry,
  );
  readonly #authFailures = this.#counter(
    'hookgate_auth_failures_total',
    'Wrong or missing hook tokens and signatures.',
  );
  readonly #locked = this.#counter('hookgate_addresses_locked_total', 'Client addresses locked by the auth limiter.');
  readonly #signatures = new Counter({
    name: 'hookgate_signature_failures_total',
    help: 'Signed requests refused (invalid or expired proof), by verify scheme.',
    labelNames: ['scheme'] as const,
    registers: [this.#registry],
  });
  readonly #duplicates = new FastCounter(
    'hookgate_duplicates_total',
    'Requests answered as duplicates of an idempotency key seen before.',
    ['endpoint', 'mapping'],
    this.#registry,
  );
  readonly #reined = new FastCounter(
    'hookgate_reined_total',
    'Requests held back at the door, by endpoint, mapping id and reason: ignored (no filter took it), source_not_allowed, hook_rate_limited.',
    ['endpoint', 'mapping', 'reason'],
    this.#registry,
  );
  readonly #runs = new Counter({
    name: 'hookgate_runs_total',
    help: 'Agent runs reaching each status (queued, running, retrying, ok, error, timeout).',
    labelNames: ['status'] as const,
    registers: [this.#registry],
  });
  readonly #retries = new Counter({
    name: 'hookgate_retries_total',
    help: 'Failed agent runs (kind "run") and channel deliveries (kind "delivery") scheduled for another try.',
    labelNames: ['kind'] as const,
    registers: [this.#registry],
  });
  readonly #fallbacks = new Counter({
    name: 'hookgate_reply_fallbacks_total',
    help: 'Replies that failed for good on one channel (from) and went to the next of their fallback channels (to).',
    labelNames: ['from', 'to'] as const,
    registers: [this.#registry],
  });
  readonly #transformCalls = new Counter({
    name: 'hookgate_transform_calls_total',
    help: 'Transform calls, by result (ok or failed).',
    labelNames: ['result'] as const,
    registers: [this.#registry],
  });
  readonly #transformTimeouts = this.#counter(
    'hookgate_transform_timeouts_total',
    'Transform calls stopped at their time limit.',
  );
  readonly #workerRestarts = this.#counter(
    'hookgate_transform_worker_restarts_total',
    'Transform workers terminated after a timeout, a crash or too much memory, and replaced.',
  );
  readonly #reloads = new Counter({
    name: 'hookgate_reloads_total',
    help: 'Config reloads, by result (ok or failed).',
    labelNames: ['result'] as const,
    registers: [this.#registry],
  });
  readonly #sharedState = new Gauge({
    name: 'hookgate_shared_state_up',
    help: '1 when the shared state (Redis) is reachable, 0 when not; absent without shared state.',
    registers: [this.#registry],
  });

  readonly #failures = new Counter({
    name: 'hookgate_failures_total',
    help: 'Runs and deliveries recorded as failures (dead letters), by kind (run or delivery).',
    labelNames: ['kind'] as const,
    registers: [this.#registry],
  });
  readonly #replays = new Counter({
    name: 'hookgate_replays_total',
    help: 'Failures and runs replayed, by kind (run or delivery).',
    labelNames: ['kind'] as const,
    registers: [this.#registry],
  });

  readonly #digested = new Counter({
    name: 'hookgate_digested_total',
    help: "Requests past their budget kept for the window's digest instead of a run, by hook.",
    labelNames: ['hook'] as const,
    registers: [this.#registry],
  });

  readonly #coalesced = new Counter({
    name: 'hookgate_coalesced_total',
    help: 'Requests whose run joined a batch of the same key (coalesce), by hook.',
    labelNames: ['hook'] as const,
    registers: [this.#registry],
  });

  // Children per label set, looked up once: the hot path then costs two Map lookups and three updates
  // (these series are our own, fast-series.ts: prom-client's re-hash their labels at every update).
  readonly #children = new Map<EndpointLabel, Map<string, Children>>();

  #counter(name: string, help: string): Counter {
    return new Counter({ name, help, registers: [this.#registry] });
  }

  request(endpoint: EndpointLabel, mapping: string, status: number, seconds: number, bodyBytes: number): void {
    const children = this.#childrenOf(endpoint, mapping);
    let counter = children.byStatus.get(status);
    if (!counter) {
      counter = this.#requests.series(endpoint, mapping, String(status));
      children.byStatus.set(status, counter);
    }
    counter.inc();
    children.duration.observe(seconds);
    children.bodies.observe(bodyBytes);
  }

  #childrenOf(endpoint: EndpointLabel, mapping: string): Children {
    let byMapping = this.#children.get(endpoint);
    if (!byMapping) this.#children.set(endpoint, (byMapping = new Map()));
    let children = byMapping.get(mapping);
    if (!children) {
      children = {
        byStatus: new Map(),
        duration: this.#duration.series(endpoint, mapping),
        bodies: this.#bodies.series(endpoint, mapping),
        duplicates: undefined,
      };
      byMapping.set(mapping, children);
    }
    return children;
  }

  authFailure(): void {
    this.#authFailures.inc();
  }
  addressLocked(): void {
    this.#locked.inc();
  }
  signatureFailure(scheme: string): void {
    this.#signatures.labels(scheme).inc();
  }
  duplicate(endpoint: EndpointLabel, mapping: string): void {
    const children = this.#childrenOf(endpoint, mapping);
    (children.duplicates ??= this.#duplicates.series(endpoint, mapping)).inc();
  }
  reined(endpoint: EndpointLabel, mapping: string, reason: ReinReason): void {
    this.#reined.series(endpoint, mapping, reason).inc();
  }
  runStatus(status: string): void {
    this.#runs.labels(RUN_STATUSES.has(status) ? status : 'other').inc();
  }
  retryScheduled(kind: RetryKind): void {
    this.#retries.labels(kind).inc();
  }
  replyFallback(from: string, to: string): void {
    this.#fallbacks.labels(from, to).inc();
  }
  transformCall(ok: boolean): void {
    this.#transformCalls.labels(ok ? 'ok' : 'failed').inc();
  }
  transformTimeout(): void {
    this.#transformTimeouts.inc();
  }
  transformWorkerRestart(): void {
    this.#workerRestarts.inc();
  }
  reload(ok: boolean): void {
    this.#reloads.labels(ok ? 'ok' : 'failed').inc();
  }
  sharedStateUp(up: boolean): void {
    this.#sharedState.set(up ? 1 : 0);
  }
  failure(kind: 'run' | 'delivery'): void {
    this.#failures.labels(kind).inc();
  }
  replay(kind: 'run' | 'delivery'): void {
    this.#replays.labels(kind).inc();
  }

  digested(hook: string): void {
    this.#digested.labels(hook).inc();
  }

  coalesced(hook: string): void {
    this.#coalesced.labels(hook).inc();
  }

  observeBudgets(read: () => Iterable<BudgetGaugeRow>): void {
    const gauge = (name: string, help: string, pick: (row: BudgetGaugeRow) => number): void => {
      this.#registry.removeSingleMetric(name);
      new Gauge({
        name,
        help,
        labelNames: ['budget'] as const,
        registers: [this.#registry],
        collect() {
          // Budgets a reload removed leave no series behind.
          this.reset();
          for (const row of read()) this.labels(row.budget).set(pick(row));
        },
      });
    };
    gauge(
      'hookgate_budget_runs',
      "Runs counted in each budget's open window (hook:<id>, or hooks for all).",
      (r) => r.runs,
    );
    gauge('hookgate_budget_tokens', "Model tokens counted in each budget's open window.", (r) => r.tokens);
  }

  observeGauge(name: GaugeName, read: () => number): void {
    this.#registry.removeSingleMetric(`hookgate_${name}`);
    new Gauge({
      name: `hookgate_${name}`,
      help: GAUGE_HELP[name],
      registers: [this.#registry],
      collect() {
        this.set(read());
      },
    });
  }

  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.#registry.contentType, text: await this.#registry.metrics() };
  }
}

const GAUGE_HELP = {
  run_queue_depth: 'Agent runs accepted and waiting for a slot.',
  runs_running: 'Agent runs running now.',
  held_actions: 'Actions held for paused hooks, waiting for their resume.',
  requests_waiting: 'Hook requests waiting for their runs to end (waitForCompletion).',
  budget_digests_waiting: 'Requests past their budget kept for digests not yet posted.',
  batched_requests_waiting: 'Requests in coalesced batches whose run has not started.',
  request_log_loading: '1 while the request log on disk is read back after a start, else 0.',
} as const;

const nothing = (): void => {};

/** Metrics off: every event is dropped, and /metrics has nothing to show. */
export const NO_METRICS: HookMetrics = {
  request: nothing,
  authFailure: nothing,
  addressLocked: nothing,
  signatureFailure: nothing,
  duplicate: nothing,
  reined: nothing,
  runStatus: nothing,
  retryScheduled: nothing,
  replyFallback: nothing,
  transformCall: nothing,
  transformTimeout: nothing,
  transformWorkerRestart: nothing,
  reload: nothing,
  sharedStateUp: nothing,
  failure: nothing,
  replay: nothing,
  digested: nothing,
  coalesced: nothing,
  observeBudgets: nothing,
  observeGauge: nothing,
  registry: undefined,
  exposition: () => Promise.resolve({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '' }),
};

export function createMetrics(enabled = true): HookMetrics {
  return enabled ? new PromMetrics() : NO_METRICS;
}
