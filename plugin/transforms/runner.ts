// Runs transform modules (user code) in a small pool of worker threads, so that a transform that loops,
// never settles, eats memory or calls process.exit() costs one worker, not the gateway.
//
// - Workers start lazily (first call) with heap limits. A call goes to the least busy worker that has
//   room (fewer than `pipeline` calls handed to it) and is not stalled; a worker is stalled when it is
//   running a call and has not been heard from for STALL_MS. Another worker is started (up to
//   `workers`) only when every worker is stalled; otherwise the call waits in a bounded queue. One
//   worker serves a steady load (handing it its next calls before it has answered the last keeps it
//   from idling while the main thread serves HTTP); a second one starts when a transform hogs the first.
// - A call's clock starts when its transform function is invoked (`timeoutMs`). A worker owing a call
//   it has not started (loading a module) must start it within the load budget (at least
//   `loadTimeoutMs`). At a deadline the worker is terminated and replaced: the late call fails, calls
//   the worker had not started go back to the front of the queue, and calls it had started (async
//   ones overlap) fail with the reason why their worker went away.
// - Answers carry the call id; anything from a worker that was terminated, or for another call, is ignored.
// - invalidate() retires every worker (idle ones now, busy ones when their calls end): the next call gets
//   a fresh worker that loads the module, its imports and Node's ESM cache afresh.
// - Limits beyond time and heap: the returned action may take at most `maxOutputBytes` as JSON (the
//   worker measures it before posting); what lives outside the heap (Buffers, ArrayBuffers,
//   WebAssembly memories: the isolate's external memory) is bounded by `maxOffHeapMb`. The worker
//   watches its own external memory between and after calls; the main thread reads the process RSS
//   while calls run, which catches a call that allocates without ever yielding. Either way the worker
//   is terminated, which gives the memory back.
// - A failure's `reason` is fixed wording (transform-reasons.ts) that carries nothing the transform
//   wrote; its own message is `detail`, for operator tools, and is never logged.
// - Idle workers are unref'd: the runner never keeps the process alive on its own. A worker idle for
//   `idleRetireMs` is retired: a loaded worker holds about 40 MB, which a transform used in bursts
//   should not pin for good; the next call starts a fresh one.
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import {
  MEMORY_REASON,
  loadTimedOut,
  stoppedWithWorker,
  timedOut,
  workerCrash,
  workerFailure,
} from './reasons.ts';

export interface TransformCall {
  /** Absolute path, from confineModule. */
  file: string;
  /** Export to call; 'default' unless the mapping says otherwise. */
  exportName: string;
  /** What the transform function is given; item and index for a forEach item. */
  ctx: {
    payload: unknown;
    headers: Record<string, string>;
    query: Record<string, string>;
    path: string;
    /** Given to the transform as a URL object. */
    url?: string;
    item?: unknown;
    index?: number;
  };
  /** Most bytes the returned action may take as JSON: the mapping's body limit. Default 262144. */
  maxOutputBytes?: number;
}

export type TransformOutcome =
  | { ok: true; value: Record<string, unknown> | null }
  | {
      ok: false;
      /** Fixed wording, one line: nothing the transform wrote or threw. Safe to log and to answer with. */
      reason: string;
      /** What the transform said (its error message, one line). For operator tools only: never log it or answer with it. */
      detail?: string;
    };

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

const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_WORKERS = 2;
const DEFAULT_OLD_GEN_MB = 64;
const YOUNG_GEN_MB = 4;
const DEFAULT_OFF_HEAP_MB = 64;
const DEFAULT_MAX_OUTPUT_BYTES = 262_144;
const MB = 1024 * 1024;
/**
 * How often the main thread reads the process RSS while a call runs (a worker busy in synchronous code
 * cannot watch itself). A call's RSS is first read at the first tick it is running; the worker is
 * stopped when the process has grown by more than the off-heap limit plus the heap a worker may
 * legitimately fill (old generation and young semispaces), so only runaway growth trips it.
 */
const RSS_TICK_MS = 50;
const DEFAULT_MAX_QUEUE = 1000;
const DEFAULT_PIPELINE = 32;
/** A worker running a call that has not answered for this long takes no more calls while it lasts. */
const STALL_MS = 100;
const DEFAULT_LOAD_TIMEOUT_MS = 10_000;
const DEFAULT_IDLE_RETIRE_MS = 60_000;
const WORKER_URL = new URL('./transform-worker.mjs', import.meta.url);

interface PendingCall {
  readonly id: number;
  readonly call: TransformCall;
  readonly resolve: (outcome: TransformOutcome) => void;
  /** Runs from the worker's "start": the transform's own time budget. */
  timer?: NodeJS.Timeout;
  /** Process RSS at the first RSS tick after the call started. */
  rssAtStart?: number;
  started: boolean;
  settled: boolean;
}

interface Slot {
  readonly worker: Worker;
  readonly generation: number;
  /** Handed to this worker and not answered yet, in the order sent (the worker takes them in order). */
  readonly calls: Map<number, PendingCall>;
  /** The load budget of `loading`: the first call not started while none runs. */
  loadTimer?: NodeJS.Timeout;
  loading?: PendingCall;
  /** performance.now() of the worker's last message. */
  heardAt: number;
  /** Retires the worker if it is still idle when it fires; refreshed whenever the worker goes idle. */
  idleTimer?: NodeJS.Timeout;
  dead: boolean;
  /** The worker's own code loaded ('ready'); a death before it is a worker that could not start. */
  ready?: boolean;
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'start'; id: number }
  | { type: 'memory' }
  | { type: 'result'; id: number; ok: true; value: Record<string, unknown> | null }
  | { type: 'result'; id: number; ok: false; code: unknown; kind?: unknown; detail?: unknown };

function positive(value: number | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
}

function oneLine(text: string, max = 300): string {
  const line =
    text
      .split(/\r\n|\r|\n/)
      .map((l) => l.trim())
      .find((l) => l !== '') ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function outputLimit(bytes: number | undefined): number {
  return typeof bytes === 'number' && Number.isSafeInteger(bytes) && bytes > 0 ? bytes : DEFAULT_MAX_OUTPUT_BYTES;
}

function isWorkerMessage(msg: unknown): msg is WorkerMessage {
  if (msg === null || typeof msg !== 'object') return false;
  const m = msg as Record<string, unknown>;
  if (m.type === 'memory' || m.type === 'ready') return true;
  if (typeof m.id !== 'number') return false;
  if (m.type === 'start') return true;
  if (m.type !== 'result') return false;
  if (m.ok === true) {
    const v = m.value;
    return v === null || (typeof v === 'object' && !Array.isArray(v));
  }
  return m.ok === false && typeof m.code === 'string';
}

export class TransformRunner {
  private timeoutMs: number;
  private readonly size: number;
  private readonly oldGenMb: number;
  private readonly offHeapBytes: number;
  /** RSS growth during one call that stops its worker: see RSS_TICK_MS. */
  private readonly rssGuardBytes: number;
  private rssTimer?: NodeJS.Timeout;
  private readonly maxQueue: number;
  private readonly pipeline: number;
  private readonly loadTimeoutMs: number | undefined;
  private readonly idleRetireMs: number;
  private readonly logger: TransformRunnerOptions['logger'];
  private readonly events: TransformEvents | undefined;

  private readonly slots = new Set<Slot>();
  private readonly queue: PendingCall[] = [];
  private nextId = 1;
  private generation = 0;
  private closed = false;

  constructor(opts: TransformRunnerOptions) {
    this.timeoutMs = positive(opts.timeoutMs, DEFAULT_TIMEOUT_MS);
    this.size = Math.max(1, Math.floor(positive(opts.workers, DEFAULT_WORKERS)));
    this.oldGenMb = positive(opts.maxOldGenerationSizeMb, DEFAULT_OLD_GEN_MB);
    this.offHeapBytes = Math.floor(positive(opts.maxOffHeapMb, DEFAULT_OFF_HEAP_MB) * MB);
    this.rssGuardBytes = this.offHeapBytes + Math.floor((this.oldGenMb + 4 * YOUNG_GEN_MB) * MB);
    this.maxQueue = Math.max(0, Math.floor(opts.maxQueue ?? DEFAULT_MAX_QUEUE));
    this.pipeline = Math.max(1, Math.floor(positive(opts.pipeline, DEFAULT_PIPELINE)));
    this.loadTimeoutMs =
      opts.loadTimeoutMs !== undefined ? positive(opts.loadTimeoutMs, DEFAULT_LOAD_TIMEOUT_MS) : undefined;
    this.idleRetireMs = positive(opts.idleRetireMs, DEFAULT_IDLE_RETIRE_MS);
    this.logger = opts.logger;
    this.events = opts.events;
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
      const pending: PendingCall = { id: this.nextId++, call, resolve, started: false, settled: false };
      let slot: Slot | undefined;
      try {
        slot = this.freeSlot();
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
   * ones at once, busy ones when their calls end (they take no new ones). `file` is accepted for
   * callers that know which module changed; since a module's imports are cached too, every worker is
   * retired either way.
   */
  invalidate(_file?: string): void {
    this.generation++;
    for (const slot of [...this.slots]) {
      if (slot.calls.size === 0) void this.retire(slot);
    }
  }

  /** Terminates every worker; waiting and running calls resolve `{ ok: false }`. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.rssTimer);
    this.rssTimer = undefined;
    for (const pending of this.queue.splice(0))
      this.settle(pending, { ok: false, reason: 'transform runner is closed' });
    const exits: Promise<unknown>[] = [];
    for (const slot of [...this.slots]) {
      exits.push(this.retire(slot));
      for (const pending of slot.calls.values())
        this.settle(pending, { ok: false, reason: 'transform runner is closed' });
    }
    await Promise.all(exits);
  }

  // --- pool -----------------------------------------------------------------------------------------

  /**
   * The least busy healthy worker with room; a new worker only when none is healthy (all stalled, or
   * none yet); undefined when the call must wait. Throws if a worker cannot be created.
   */
  private freeSlot(): Slot | undefined {
    let best: Slot | undefined;
    let healthy = false;
    const now = performance.now();
    for (const slot of this.slots) {
      // Workers of an older generation (invalidated) finish their calls but take no new ones.
      if (slot.dead || slot.generation !== this.generation) continue;
      if (slot.calls.size === 0) return slot;
      if (now - slot.heardAt > STALL_MS && this.runsACall(slot)) continue;
      healthy = true;
      if (slot.calls.size < this.pipeline && (!best || slot.calls.size < best.calls.size)) best = slot;
    }
    return best ?? (healthy ? undefined : this.spawn());
  }

  private runsACall(slot: Slot): boolean {
    for (const pending of slot.calls.values()) if (pending.started) return true;
    return false;
  }

  /** A new worker, or undefined when the pool is full (or closed); throws if a worker cannot be created. */
  private spawn(): Slot | undefined {
    if (this.closed || this.slots.size >= this.size) return undefined;
    let worker: Worker;
    try {
      worker = new Worker(WORKER_URL, {
        // Bare Node: no tsx hooks, no test-runner flags; the worker is plain JavaScript.
        execArgv: [],
        resourceLimits: {
          maxOldGenerationSizeMb: this.oldGenMb,
          maxYoungGenerationSizeMb: Math.min(YOUNG_GEN_MB, this.oldGenMb),
        },
        workerData: { maxOffHeapBytes: this.offHeapBytes },
      });
    } catch (err) {
      this.logger?.warn('transform worker could not be started', {
        error: oneLine(String((err as Error)?.message ?? err)),
      });
      throw err;
    }
    const slot: Slot = {
      worker,
      generation: this.generation,
      calls: new Map(),
      heardAt: performance.now(),
      dead: false,
    };
    this.slots.add(slot);
    worker.on('message', (msg: unknown) => this.onMessage(slot, msg));
    worker.on('error', (err: Error) => this.onDeath(slot, workerCrash(err)));
    worker.on('exit', (code: number) => this.onDeath(slot, workerCrash(undefined, code)));
    this.watchRss();
    return slot;
  }

  private dispatch(slot: Slot, pending: PendingCall): void {
    const { file, exportName, ctx, maxOutputBytes } = pending.call;
    try {
      slot.worker.postMessage({
        type: 'call',
        id: pending.id,
        file,
        exportName,
        ctx,
        maxOutputBytes: outputLimit(maxOutputBytes),
      });
    } catch {
      // The context could not be cloned: nothing reached the worker, which stays usable.
      this.settle(pending, { ok: false, reason: 'transform input could not be passed to the worker' });
      this.release(slot);
      return;
    }
    slot.calls.set(pending.id, pending);
    slot.worker.ref();
    this.watchLoad(slot);
  }

  private onMessage(slot: Slot, msg: unknown): void {
    if (slot.dead || !isWorkerMessage(msg)) return;
    slot.heardAt = performance.now();
    if (msg.type === 'ready') {
      slot.ready = true;
      return;
    }
    if (msg.type === 'memory') {
      this.onOverMemory(slot);
      return;
    }
    const pending = slot.calls.get(msg.id);
    if (!pending || pending.settled) return;
    if (msg.type === 'start') {
      pending.started = true;
      const ms = this.timeoutMs;
      pending.timer = setTimeout(() => this.onDeadline(slot, pending, timedOut(ms)), ms);
      this.watchLoad(slot);
      return;
    }
    slot.calls.delete(msg.id);
    if (msg.ok) {
      this.settle(pending, { ok: true, value: msg.value });
    } else {
      const reason = workerFailure(
        msg.code,
        pending.call.exportName,
        msg.kind,
        outputLimit(pending.call.maxOutputBytes),
      );
      const detail = typeof msg.detail === 'string' ? oneLine(msg.detail) : undefined;
      this.settle(pending, detail ? { ok: false, reason, detail } : { ok: false, reason });
      if (msg.code === 'memory') {
        this.onOverMemory(slot);
        return;
      }
    }
    this.release(slot);
  }

  /**
   * The load budget runs while the worker owes a call it has not started and runs none: it is loading
   * a module (or about to start the call). While a call runs, that call's own timer watches the worker.
   */
  private watchLoad(slot: Slot): void {
    let waiting: PendingCall | undefined;
    for (const pending of slot.calls.values()) {
      if (pending.started) {
        waiting = undefined;
        break;
      }
      waiting ??= pending;
    }
    if (waiting === slot.loading) return;
    clearTimeout(slot.loadTimer);
    slot.loading = waiting;
    slot.loadTimer = undefined;
    if (!waiting) return;
    const budget = this.loadTimeoutMs ?? Math.max(DEFAULT_LOAD_TIMEOUT_MS, this.timeoutMs);
    slot.loadTimer = setTimeout(() => this.onDeadline(slot, waiting, loadTimedOut(budget)), budget);
  }

  private onDeadline(slot: Slot, late: PendingCall, reason: string): void {
    if (slot.dead || late.settled || !slot.calls.has(late.id)) return;
    this.logger?.warn('transform stopped: worker terminated', this.fields(late, reason));
    this.events?.transformTimeout();
    this.events?.transformWorkerRestart();
    slot.calls.delete(late.id);
    this.settle(late, { ok: false, reason });
    void this.retire(slot);
    this.reclaim(slot, stoppedWithWorker('ran out of time'));
  }

  /**
   * The worker holds more off-heap memory than allowed (it said so), or the process grew past the RSS
   * guard while it ran calls: the calls it runs share the blame, and terminating it frees the memory.
   */
  private onOverMemory(slot: Slot): void {
    if (slot.dead) return;
    const started = [...slot.calls.values()].filter((p) => p.started);
    this.events?.transformWorkerRestart();
    this.logger?.warn('transform stopped: worker terminated for using too much memory', {
      modules: [...new Set(started.map((p) => path.basename(p.call.file)))],
      reason: MEMORY_REASON,
    });
    for (const pending of started) {
      slot.calls.delete(pending.id);
      this.settle(pending, { ok: false, reason: MEMORY_REASON });
    }
    void this.retire(slot);
    this.reclaim(slot, stoppedWithWorker('used too much memory'));
  }

  /** One RSS timer while any worker lives; a tick reads the RSS only when a call is running. */
  private watchRss(): void {
    if (this.rssTimer) return;
    this.rssTimer = setInterval(() => this.checkRss(), RSS_TICK_MS);
    this.rssTimer.unref();
  }

  private checkRss(): void {
    if (this.slots.size === 0) {
      clearInterval(this.rssTimer);
      this.rssTimer = undefined;
      return;
    }
    let rss: number | undefined;
    for (const slot of [...this.slots]) {
      for (const pending of slot.calls.values()) {
        if (!pending.started) continue;
        rss ??= process.memoryUsage.rss();
        if (pending.rssAtStart === undefined) {
          pending.rssAtStart = rss;
        } else if (rss - pending.rssAtStart > this.rssGuardBytes) {
          this.onOverMemory(slot);
          break;
        }
      }
    }
  }

  private onDeath(slot: Slot, crash: { reason: string; detail: string }): void {
    if (slot.dead) return;
    slot.dead = true;
    this.slots.delete(slot);
    clearTimeout(slot.loadTimer);
    clearTimeout(slot.idleTimer);
    const { reason, detail } = crash;
    // No user code ran yet: the error is about the worker's own files (a missing module, say), so it is logged.
    if (!slot.ready && !this.closed) this.logger?.warn('transform worker could not start', { error: detail });
    if (slot.calls.size === 0) {
      if (!this.closed) this.logger?.warn('idle transform worker died', { reason });
      this.pump();
      return;
    }
    this.events?.transformWorkerRestart();
    // The calls it was running share the blame; with none running, the call it was loading for.
    const culprits = [...slot.calls.values()].filter((p) => p.started);
    if (culprits.length === 0) culprits.push(slot.calls.values().next().value!);
    for (const pending of culprits) {
      this.logger?.warn('transform worker died during a call', this.fields(pending, reason));
      slot.calls.delete(pending.id);
      this.settle(pending, { ok: false, reason, detail });
    }
    this.reclaim(slot, reason);
  }

  /** After a worker is gone: calls it never started wait again at the front; started ones fail. */
  private reclaim(slot: Slot, startedReason: string): void {
    const unstarted: PendingCall[] = [];
    for (const pending of slot.calls.values()) {
      if (pending.started) this.settle(pending, { ok: false, reason: startedReason });
      else unstarted.push(pending);
    }
    slot.calls.clear();
    this.queue.unshift(...unstarted);
    this.pump();
  }

  /** A worker answered a call: reuse it, or retire it once idle if modules were invalidated meanwhile. */
  private release(slot: Slot): void {
    if (slot.dead) return;
    if (slot.calls.size > 0) {
      this.watchLoad(slot);
    } else if (slot.generation !== this.generation || this.closed) {
      void this.retire(slot);
    } else {
      slot.worker.unref();
      this.retireWhenIdle(slot);
    }
    this.pump();
  }

  /** One timer per worker, pushed back each time the worker goes idle: a refresh per idle moment, not a timer per call. */
  private retireWhenIdle(slot: Slot): void {
    if (slot.idleTimer) {
      slot.idleTimer.refresh();
      return;
    }
    slot.idleTimer = setTimeout(() => {
      slot.idleTimer = undefined;
      if (slot.dead) return;
      if (slot.calls.size === 0 && this.queue.length === 0) void this.retire(slot);
    }, this.idleRetireMs);
    slot.idleTimer.unref();
  }

  private retire(slot: Slot): Promise<unknown> {
    slot.dead = true;
    this.slots.delete(slot);
    clearTimeout(slot.loadTimer);
    clearTimeout(slot.idleTimer);
    return slot.worker.terminate().catch(() => undefined);
  }

  /** Hand queued calls to idle (or new) workers. */
  private pump(): void {
    while (this.queue.length > 0 && !this.closed) {
      let slot: Slot | undefined;
      try {
        slot = this.freeSlot();
      } catch {
        // No worker can be started; fail what waits rather than letting it hang (busy workers, if
        // any, keep serving: only calls that no worker will ever take are failed).
        if (this.slots.size === 0) {
          for (const pending of this.queue.splice(0))
            this.settle(pending, { ok: false, reason: 'transform worker could not be started' });
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
    this.events?.transformCall(outcome.ok);
    pending.resolve(outcome);
  }

  private fields(pending: PendingCall, reason: string): Record<string, unknown> {
    return { module: path.basename(pending.call.file), export: pending.call.exportName, reason };
  }
}
