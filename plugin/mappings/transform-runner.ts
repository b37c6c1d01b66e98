// Runs transform modules (user code) in a small pool of worker threads, so that a transform that loops,
// never settles, eats memory or calls process.exit() costs one worker, not the gateway.
//
// - Workers start lazily (first call) with heap limits; each runs one call at a time.
// - A call waits for an idle worker in a bounded queue. Its clock starts when a worker takes it: first
//   a load budget (worker start-up + module load, at least `loadTimeoutMs`), then `timeoutMs` from the
//   moment the transform function is invoked. At the deadline the worker is terminated and replaced.
// - Answers carry the call id; anything from a worker that was terminated, or for another call, is ignored.
// - invalidate() retires every worker (idle ones now, busy ones when their call ends): the next call gets
//   a fresh worker that loads the module, its imports and Node's ESM cache afresh.
// - Idle workers are unref'd: the runner never keeps the process alive on its own.
import { Worker } from 'node:worker_threads';
import path from 'node:path';

export interface TransformCall {
  /** Absolute path, from confineModule. */
  file: string;
  /** Export to call; 'default' unless the mapping says otherwise. */
  exportName: string;
  ctx: { payload: unknown; headers: Record<string, string>; query: Record<string, string>; path: string };
}

export type TransformOutcome =
  | { ok: true; value: Record<string, unknown> | null }
  | { ok: false; reason: string /* one line, no stack, no payload content */ };

export interface TransformRunnerOptions {
  /** Per call, from the moment the transform function is invoked. Default 2000. */
  timeoutMs: number;
  /** Pool size. Default 2. */
  workers?: number;
  /** Heap limit of each worker. Default 64. */
  maxOldGenerationSizeMb?: number;
  /** Calls waiting for a worker beyond this are refused. Default 1000. */
  maxQueue?: number;
  /** Budget for starting a worker and loading the module, before the transform runs. Default max(10000, timeoutMs). */
  loadTimeoutMs?: number;
  logger?: { warn(msg: string, fields?: Record<string, unknown>): void };
}

const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_WORKERS = 2;
const DEFAULT_OLD_GEN_MB = 64;
const YOUNG_GEN_MB = 16;
const DEFAULT_MAX_QUEUE = 1000;
const DEFAULT_LOAD_TIMEOUT_MS = 10_000;
const WORKER_URL = new URL('./transform-worker.mjs', import.meta.url);

interface PendingCall {
  readonly id: number;
  readonly call: TransformCall;
  readonly resolve: (outcome: TransformOutcome) => void;
  timer?: NodeJS.Timeout;
  settled: boolean;
}

interface Slot {
  readonly worker: Worker;
  readonly generation: number;
  current?: PendingCall;
  dead: boolean;
}

type WorkerMessage =
  | { type: 'start'; id: number }
  | { type: 'result'; id: number; ok: true; value: Record<string, unknown> | null }
  | { type: 'result'; id: number; ok: false; reason: string };

function positive(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}

function oneLine(text: string, max = 300): string {
  const line = text.split(/\r\n|\r|\n/).map((l) => l.trim()).find((l) => l !== '') ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function isWorkerMessage(msg: unknown): msg is WorkerMessage {
  if (msg === null || typeof msg !== 'object') return false;
  const m = msg as Record<string, unknown>;
  if (typeof m.id !== 'number') return false;
  if (m.type === 'start') return true;
  if (m.type !== 'result') return false;
  if (m.ok === true) {
    const v = m.value;
    return v === null || (typeof v === 'object' && !Array.isArray(v));
  }
  return m.ok === false && typeof m.reason === 'string';
}

function crashReason(err: Error): string {
  const code = (err as { code?: unknown }).code;
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') return 'transform crashed: out of memory';
  return `transform crashed: ${oneLine(err.message || String(code ?? 'unknown error'))}`;
}

export class TransformRunner {
  private timeoutMs: number;
  private readonly size: number;
  private readonly oldGenMb: number;
  private readonly maxQueue: number;
  private readonly loadTimeoutMs: number | undefined;
  private readonly logger: TransformRunnerOptions['logger'];

  private readonly slots = new Set<Slot>();
  private readonly queue: PendingCall[] = [];
  private nextId = 1;
  private generation = 0;
  private closed = false;

  constructor(opts: TransformRunnerOptions) {
    this.timeoutMs = positive(opts.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.size = Math.max(1, Math.floor(positive(opts.workers, DEFAULT_WORKERS)));
    this.oldGenMb = positive(opts.maxOldGenerationSizeMb, DEFAULT_OLD_GEN_MB);
    this.maxQueue = Math.max(0, Math.floor(opts.maxQueue ?? DEFAULT_MAX_QUEUE));
    this.loadTimeoutMs = opts.loadTimeoutMs !== undefined ? positive(opts.loadTimeoutMs, DEFAULT_LOAD_TIMEOUT_MS) : undefined;
    this.logger = opts.logger;
  }

  /** Workers currently alive (idle or busy); for status pages and tests. */
  get workerCount(): number {
    return this.slots.size;
  }

  /** Calls waiting for a worker. */
  get queued(): number {
    return this.queue.length;
  }

  setTimeoutMs(ms: number): void {
    this.timeoutMs = positive(ms, this.timeoutMs);
  }

  /** Never throws: every failure is an `{ ok: false, reason }` outcome. */
  run(call: TransformCall): Promise<TransformOutcome> {
    if (this.closed) return Promise.resolve({ ok: false, reason: 'transform runner is closed' });
    if (typeof call.file !== 'string' || !path.isAbsolute(call.file)) {
      return Promise.resolve({ ok: false, reason: 'transform module path must be absolute (from confineModule)' });
    }
    return new Promise<TransformOutcome>((resolve) => {
      const pending: PendingCall = { id: this.nextId++, call, resolve, settled: false };
      let slot: Slot | undefined;
      try {
        slot = this.idleSlot() ?? this.spawn();
      } catch {
        this.settle(pending, { ok: false, reason: 'transform worker could not be started' });
        return;
      }
      if (slot) {
        this.dispatch(slot, pending);
      } else if (this.queue.length >= this.maxQueue) {
        this.settle(pending, { ok: false, reason: 'transform queue is full' });
      } else {
        this.queue.push(pending);
      }
    });
  }

  /**
   * Forget loaded modules so the next call loads them afresh (hot reload). Workers are retired: idle
   * ones at once, busy ones when their current call ends. `file` is accepted for callers that know which
   * module changed; since a module's imports are cached too, every worker is retired either way.
   */
  invalidate(_file?: string): void {
    this.generation++;
    for (const slot of [...this.slots]) {
      if (!slot.current) void this.retire(slot);
    }
  }

  /** Terminates every worker; waiting and running calls resolve `{ ok: false }`. */
  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.queue.splice(0)) this.settle(pending, { ok: false, reason: 'transform runner is closed' });
    const exits: Promise<unknown>[] = [];
    for (const slot of [...this.slots]) {
      const running = slot.current;
      exits.push(this.retire(slot));
      if (running) this.settle(running, { ok: false, reason: 'transform runner is closed' });
    }
    await Promise.all(exits);
  }

  // --- pool -----------------------------------------------------------------------------------------

  private idleSlot(): Slot | undefined {
    for (const slot of this.slots) if (!slot.current && !slot.dead) return slot;
    return undefined;
  }

  /** A new worker, or undefined when the pool is full (or closed); throws if a worker cannot be created. */
  private spawn(): Slot | undefined {
    if (this.closed || this.slots.size >= this.size) return undefined;
    let worker: Worker;
    try {
      worker = new Worker(WORKER_URL, {
        // Bare Node: no tsx hooks, no test-runner flags; the worker is plain JavaScript.
        execArgv: [],
        resourceLimits: { maxOldGenerationSizeMb: this.oldGenMb, maxYoungGenerationSizeMb: Math.min(YOUNG_GEN_MB, this.oldGenMb) },
      });
    } catch (err) {
      this.logger?.warn('transform worker could not be started', { error: oneLine(String((err as Error)?.message ?? err)) });
      throw err;
    }
    const slot: Slot = { worker, generation: this.generation, dead: false };
    this.slots.add(slot);
    worker.on('message', (msg: unknown) => this.onMessage(slot, msg));
    worker.on('error', (err: Error) => this.onDeath(slot, crashReason(err)));
    worker.on('exit', (code: number) => this.onDeath(slot, `transform crashed: worker exited with code ${code}`));
    return slot;
  }

  private dispatch(slot: Slot, pending: PendingCall): void {
    slot.current = pending;
    slot.worker.ref();
    const { file, exportName, ctx } = pending.call;
    const loadBudget = this.loadTimeoutMs ?? Math.max(DEFAULT_LOAD_TIMEOUT_MS, this.timeoutMs);
    pending.timer = setTimeout(() => this.onDeadline(slot, pending, `transform module did not load within ${loadBudget} ms`), loadBudget);
    try {
      slot.worker.postMessage({ type: 'call', id: pending.id, file, exportName, ctx });
    } catch {
      // The context could not be cloned: nothing reached the worker, which stays usable.
      slot.current = undefined;
      this.settle(pending, { ok: false, reason: 'transform input could not be passed to the worker' });
      this.release(slot);
    }
  }

  private onMessage(slot: Slot, msg: unknown): void {
    const pending = slot.current;
    if (slot.dead || !pending || !isWorkerMessage(msg) || msg.id !== pending.id || pending.settled) return;
    if (msg.type === 'start') {
      clearTimeout(pending.timer);
      const ms = this.timeoutMs;
      pending.timer = setTimeout(() => this.onDeadline(slot, pending, `transform timed out after ${ms} ms`), ms);
      return;
    }
    slot.current = undefined;
    this.settle(pending, msg.ok ? { ok: true, value: msg.value } : { ok: false, reason: oneLine(msg.reason) || 'transform failed' });
    this.release(slot);
  }

  private onDeadline(slot: Slot, pending: PendingCall, reason: string): void {
    if (pending.settled || slot.current !== pending) return;
    this.logger?.warn('transform stopped: worker terminated', this.fields(pending, reason));
    this.settle(pending, { ok: false, reason });
    slot.current = undefined;
    void this.retire(slot);
    this.pump();
  }

  private onDeath(slot: Slot, reason: string): void {
    if (slot.dead) return;
    slot.dead = true;
    this.slots.delete(slot);
    const pending = slot.current;
    slot.current = undefined;
    if (pending && !pending.settled) {
      this.logger?.warn('transform worker died during a call', this.fields(pending, reason));
      this.settle(pending, { ok: false, reason });
    } else if (!this.closed) {
      this.logger?.warn('idle transform worker died', { reason });
    }
    this.pump();
  }

  /** A worker finished a call: reuse it, or retire it if modules were invalidated meanwhile. */
  private release(slot: Slot): void {
    if (slot.dead) return;
    if (slot.generation !== this.generation || this.closed) {
      void this.retire(slot);
    } else {
      slot.worker.unref();
    }
    this.pump();
  }

  private retire(slot: Slot): Promise<unknown> {
    slot.dead = true;
    this.slots.delete(slot);
    return slot.worker.terminate().catch(() => undefined);
  }

  /** Hand queued calls to idle (or new) workers. */
  private pump(): void {
    while (this.queue.length > 0 && !this.closed) {
      let slot: Slot | undefined;
      try {
        slot = this.idleSlot() ?? this.spawn();
      } catch {
        // No worker can be started; fail what waits rather than letting it hang (busy workers, if
        // any, keep serving: only calls that no worker will ever take are failed).
        if (this.slots.size === 0) {
          for (const pending of this.queue.splice(0)) this.settle(pending, { ok: false, reason: 'transform worker could not be started' });
        }
        return;
      }
      if (!slot) return;
      const next = this.queue.shift();
      if (next) this.dispatch(slot, next);
    }
  }

  private settle(pending: PendingCall, outcome: TransformOutcome): void {
    if (pending.settled) return;
    pending.settled = true;
    clearTimeout(pending.timer);
    pending.resolve(outcome);
  }

  private fields(pending: PendingCall, reason: string): Record<string, unknown> {
    return { module: path.basename(pending.call.file), export: pending.call.exportName, reason };
  }
}
