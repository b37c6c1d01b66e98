// Runs transform modules (user code) in a small pool of worker threads, so that a transform that loops,
// never settles, eats memory or calls process.exit() costs one worker, not the gateway. The design, the
// state of a worker and the limits are in README.md beside this file.
import path from 'node:path';
import { positive } from '../util/text.ts';
import { PendingCall, type TransformCall, type TransformOutcome } from './call.ts';
import { WorkerPool, type PoolSettings } from './pool.ts';
import type { SlotState } from './worker-slot.ts';

export type { TransformCall, TransformOutcome } from './call.ts';

export interface TransformRunnerOptions {
  /** Per call, from the moment the transform function is invoked. Default 2000. */
  timeoutMs: number;
  /** Pool size. Default 2. */
  workers?: number;
  /** Heap limit of each worker. Default 64. */
  maxOldGenerationSizeMb?: number;
  /** External memory (Buffers, ArrayBuffers, WebAssembly memories) a worker may hold beyond its own at start. Default 64. */
  maxOffHeapMb?: number;
  /** Calls waiting for a worker beyond this are refused. Default 1000. */
  maxQueue?: number;
  /** Calls handed to one worker at a time. Default 32. */
  pipeline?: number;
  /** Budget for starting a worker and loading the module, before the transform runs. Default max(10000, timeoutMs). */
  loadTimeoutMs?: number;
  /** A worker with no call for this long is retired. Default 60000. */
  idleRetireMs?: number;
  logger?: { warn(msg: string, fields?: Record<string, unknown>): void };
  /** Told of each call's end, of calls stopped at their time limit, and of workers replaced after a fault. */
  events?: TransformEvents;
}

export interface TransformEvents {
  transformCall(ok: boolean): void;
  transformTimeout(): void;
  transformWorkerRestart(): void;
}

/** What a status page (or a test) may see of a worker. */
export interface WorkerView {
  readonly state: SlotState;
  /** Calls handed to it and not answered yet. */
  readonly calls: number;
  /** Running a call and silent for a while: it takes no calls meanwhile. */
  readonly stalled: boolean;
}

const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_WORKERS = 2;
const DEFAULT_OLD_GEN_MB = 64;
const YOUNG_GEN_MB = 4;
const DEFAULT_OFF_HEAP_MB = 64;
const MB = 1024 * 1024;
const DEFAULT_MAX_QUEUE = 1000;
const DEFAULT_PIPELINE = 32;
const DEFAULT_LOAD_TIMEOUT_MS = 10_000;
const DEFAULT_IDLE_RETIRE_MS = 60_000;

/** The runner's settings; timeoutMs (and the load budget that follows it) may change while it runs. */
class Settings implements PoolSettings {
  timeoutMs: number;
  readonly workers: number;
  readonly maxOldGenerationSizeMb: number;
  readonly youngGenerationSizeMb = YOUNG_GEN_MB;
  readonly maxOffHeapBytes: number;
  readonly rssGuardBytes: number;
  readonly maxQueue: number;
  readonly pipeline: number;
  readonly idleRetireMs: number;
  private readonly loadTimeoutMs: number | undefined;

  constructor(opts: TransformRunnerOptions) {
    this.timeoutMs = positive(opts.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.workers = Math.max(1, Math.floor(positive(opts.workers, DEFAULT_WORKERS)));
    this.maxOldGenerationSizeMb = positive(opts.maxOldGenerationSizeMb, DEFAULT_OLD_GEN_MB);
    this.maxOffHeapBytes = Math.floor(positive(opts.maxOffHeapMb, DEFAULT_OFF_HEAP_MB) * MB);
    this.rssGuardBytes = this.maxOffHeapBytes + Math.floor((this.maxOldGenerationSizeMb + 4 * YOUNG_GEN_MB) * MB);
    this.maxQueue = Math.max(0, Math.floor(opts.maxQueue ?? DEFAULT_MAX_QUEUE));
    this.pipeline = Math.max(1, Math.floor(positive(opts.pipeline, DEFAULT_PIPELINE)));
    this.loadTimeoutMs =
      opts.loadTimeoutMs !== undefined ? positive(opts.loadTimeoutMs, DEFAULT_LOAD_TIMEOUT_MS) : undefined;
    this.idleRetireMs = positive(opts.idleRetireMs, DEFAULT_IDLE_RETIRE_MS);
  }

  get loadBudgetMs(): number {
    return this.loadTimeoutMs ?? Math.max(DEFAULT_LOAD_TIMEOUT_MS, this.timeoutMs);
  }
}

export class TransformRunner {
  private readonly settings: Settings;
  private readonly pool: WorkerPool;
  private readonly events: TransformEvents | undefined;
  private nextId = 1;

  constructor(opts: TransformRunnerOptions) {
    this.settings = new Settings(opts);
    this.events = opts.events;
    this.pool = new WorkerPool(this.settings, opts.logger, opts.events);
  }

  /** Workers currently alive (idle or busy); for status pages and tests. */
  get workerCount(): number {
    return this.pool.slots.size;
  }

  /** Calls waiting for a worker. */
  get queued(): number {
    return this.pool.queue.length;
  }

  /** Each live worker's state, in the order they were started. */
  get workers(): WorkerView[] {
    const now = performance.now();
    return [...this.pool.slots].map((slot) => ({
      state: slot.state,
      calls: slot.calls.size,
      stalled: slot.stalled(now),
    }));
  }

  setTimeoutMs(ms: number): void {
    this.settings.timeoutMs = positive(ms, this.settings.timeoutMs);
  }

  /** Never throws: every failure is an `{ ok: false, reason }` outcome. */
  run(call: TransformCall): Promise<TransformOutcome> {
    if (this.pool.closed) return Promise.resolve({ ok: false, reason: 'transform runner is closed' });
    if (typeof call.file !== 'string' || !path.isAbsolute(call.file)) {
      return Promise.resolve({ ok: false, reason: 'transform module path must be absolute (from confineModule)' });
    }
    return new Promise<TransformOutcome>((resolve) => {
      const events = this.events;
      const done = events
        ? (outcome: TransformOutcome) => {
            events.transformCall(outcome.ok);
            resolve(outcome);
          }
        : resolve;
      this.pool.submit(new PendingCall(this.nextId++, call, done));
    });
  }

  /**
   * Forget loaded modules so the next call loads them afresh (hot reload): a module's imports and
   * Node's ESM cache live in its worker, so every worker is retired, idle ones at once and busy ones
   * when their calls end (they take no new ones).
   */
  invalidate(): void {
    this.pool.retireAll();
  }

  /** Terminates every worker; waiting and running calls resolve `{ ok: false }`. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
