// One worker thread of the pool and the calls handed to it, as a state machine (README.md has the
// diagram). Each event has one method (take, message: ready / start / result / memory, deadline, idle,
// exit) and every event ends in update(), the one place the state and the timers that follow from it
// are set: the load budget while the worker owes a call it has not started, the idle timer while it
// has none. What the pool must do when the slot frees up or goes away, it is told through SlotOwner.
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { errorMessage } from '../util/errors.ts';
import type { PendingCall } from './call.ts';
import {
  MEMORY_REASON,
  firstLine,
  loadTimedOut,
  stoppedWithWorker,
  timedOut,
  workerCrash,
  workerFailure,
} from './reasons.ts';

/**
 * starting  the worker's own files are loading (no 'ready' yet); calls may already be handed to it
 * loading   it owes calls and runs none: loading a module, or about to start a call
 * running   at least one call's transform function runs
 * idle      no calls; retired when idle for idleRetireMs
 * retiring  takes no new calls (modules were invalidated); terminated once its calls end
 * dead      terminated or exited; no event is heeded
 */
export type SlotState = 'starting' | 'loading' | 'running' | 'idle' | 'retiring' | 'dead';

/** Read at each event, so setTimeoutMs() applies to calls started after it. */
export interface SlotSettings {
  readonly timeoutMs: number;
  readonly loadBudgetMs: number;
  readonly idleRetireMs: number;
  readonly maxOldGenerationSizeMb: number;
  readonly youngGenerationSizeMb: number;
  readonly maxOffHeapBytes: number;
}

export interface SlotOwner {
  readonly closed: boolean;
  readonly logger: { warn(msg: string, fields?: Record<string, unknown>): void } | undefined;
  readonly events: { transformTimeout(): void; transformWorkerRestart(): void } | undefined;
  /** A call ended on this slot: queued calls may go to it (or to a new worker). */
  freed(slot: WorkerSlot): void;
  /** The slot is dead; the calls it never started wait again at the front of the queue. */
  gone(slot: WorkerSlot, unstarted: PendingCall[]): void;
  /** Whether an idle slot may retire now (nothing waits for a worker). */
  mayRetireIdle(): boolean;
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'start'; id: number }
  | { type: 'memory' }
  | { type: 'result'; id: number; ok: true; value: Record<string, unknown> | null }
  | { type: 'result'; id: number; ok: false; code: unknown; kind?: unknown; detail?: unknown };

/** A worker running a call that has not answered for this long takes no more calls while it lasts. */
const STALL_MS = 100;
/** A detail the runner passes on is at most this long (the worker clips its own shorter). */
const MAX_DETAIL = 300;
// Resolved beside this file in plugin/, and beside the bundle chunk that holds it in dist/ (flat).
const WORKER_URL = new URL('./transform-worker.mjs', import.meta.url);

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

export class WorkerSlot {
  state: SlotState = 'starting';
  /** Handed to this worker and not answered yet, in the order sent (the worker takes them in order). */
  readonly calls = new Map<number, PendingCall>();
  /** performance.now() of the worker's last message. */
  private heardAt = performance.now();
  private readonly worker: Worker;
  /** The call the load budget runs for: the first not started while none runs. */
  private loading?: PendingCall;
  private loadTimer?: NodeJS.Timeout;
  private idleTimer?: NodeJS.Timeout;
  /** The worker's own code loaded ('ready'); a death before it is a worker that could not start. */
  private ready = false;

  /** Starts a worker thread; throws (after logging why) if one cannot be created. */
  constructor(
    private readonly owner: SlotOwner,
    private readonly settings: SlotSettings,
  ) {
    try {
      this.worker = new Worker(WORKER_URL, {
        // Bare Node: no tsx hooks, no test-runner flags; the worker is plain JavaScript.
        execArgv: [],
        resourceLimits: {
          maxOldGenerationSizeMb: settings.maxOldGenerationSizeMb,
          maxYoungGenerationSizeMb: Math.min(settings.youngGenerationSizeMb, settings.maxOldGenerationSizeMb),
        },
        workerData: { maxOffHeapBytes: settings.maxOffHeapBytes },
      });
    } catch (err) {
      owner.logger?.warn('transform worker could not be started', { error: firstLine(errorMessage(err), MAX_DETAIL) });
      throw err;
    }
    this.worker.on('message', (msg: unknown) => this.message(msg));
    this.worker.on('error', (err: Error) => this.exit(workerCrash(err)));
    this.worker.on('exit', (code: number) => this.exit(workerCrash(undefined, code)));
  }

  /** Running a call and silent for STALL_MS: a transform hogs it, so calls should go elsewhere. */
  stalled(now: number): boolean {
    return this.state === 'running' && now - this.heardAt > STALL_MS;
  }

  /** Hands the worker a call. */
  take(pending: PendingCall): void {
    const { file, exportName, ctx } = pending.call;
    try {
      this.worker.postMessage({
        type: 'call',
        id: pending.id,
        file,
        exportName,
        ctx,
        maxOutputBytes: pending.maxOutputBytes,
      });
    } catch {
      // The context could not be cloned: nothing reached the worker, which stays usable.
      pending.settle({ ok: false, reason: 'transform input could not be passed to the worker' });
      this.update();
      this.owner.freed(this);
      return;
    }
    this.calls.set(pending.id, pending);
    this.worker.ref();
    this.update();
  }

  /** Takes no new calls; terminated now if it has none, else once they end. */
  retire(): Promise<unknown> {
    if (this.state === 'dead') return Promise.resolve();
    this.state = 'retiring';
    clearTimeout(this.idleTimer);
    if (this.calls.size > 0) return Promise.resolve();
    const exited = this.terminate();
    this.owner.gone(this, []);
    return exited;
  }

  /** Terminates the worker at once (the runner closes). */
  terminate(): Promise<unknown> {
    this.state = 'dead';
    clearTimeout(this.loadTimer);
    clearTimeout(this.idleTimer);
    return this.worker.terminate().catch(() => undefined);
  }

  private message(msg: unknown): void {
    if (this.state === 'dead' || !isWorkerMessage(msg)) return;
    this.heardAt = performance.now();
    if (msg.type === 'ready') {
      this.ready = true;
      this.update();
    } else if (msg.type === 'memory') {
      this.overMemory();
    } else if (msg.type === 'start') {
      this.start(msg.id);
    } else {
      this.result(msg);
    }
  }

  private start(id: number): void {
    const pending = this.calls.get(id);
    if (!pending || pending.settled) return;
    pending.started = true;
    const ms = this.settings.timeoutMs;
    pending.timer = setTimeout(() => this.deadline(pending, timedOut(ms)), ms);
    this.update();
  }

  private result(msg: Extract<WorkerMessage, { type: 'result' }>): void {
    const pending = this.calls.get(msg.id);
    if (!pending || pending.settled) return;
    this.calls.delete(msg.id);
    if (msg.ok) {
      pending.settle({ ok: true, value: msg.value });
    } else {
      const reason = workerFailure(msg.code, pending.call.exportName, msg.kind, pending.maxOutputBytes);
      const detail = typeof msg.detail === 'string' ? firstLine(msg.detail, MAX_DETAIL) : '';
      pending.settle(detail ? { ok: false, reason, detail } : { ok: false, reason });
      if (msg.code === 'memory') {
        this.overMemory();
        return;
      }
    }
    this.update();
    this.owner.freed(this);
  }

  /** A call ran out of its time (or its module out of the load budget): the worker is terminated. */
  private deadline(late: PendingCall, reason: string): void {
    if (this.state === 'dead' || late.settled || !this.calls.has(late.id)) return;
    this.owner.logger?.warn('transform stopped: worker terminated', late.logFields(reason));
    this.owner.events?.transformTimeout();
    this.owner.events?.transformWorkerRestart();
    this.calls.delete(late.id);
    late.settle({ ok: false, reason });
    void this.terminate();
    this.reclaim(stoppedWithWorker('ran out of time'));
  }

  /**
   * The worker holds more off-heap memory than allowed (it said so), or the process grew past the RSS
   * guard while it ran calls: the calls it runs share the blame, and terminating it frees the memory.
   */
  overMemory(): void {
    if (this.state === 'dead') return;
    const started = [...this.calls.values()].filter((p) => p.started);
    this.owner.events?.transformWorkerRestart();
    this.owner.logger?.warn('transform stopped: worker terminated for using too much memory', {
      modules: [...new Set(started.map((p) => path.basename(p.call.file)))],
      reason: MEMORY_REASON,
    });
    for (const pending of started) {
      this.calls.delete(pending.id);
      pending.settle({ ok: false, reason: MEMORY_REASON });
    }
    void this.terminate();
    this.reclaim(stoppedWithWorker('used too much memory'));
  }

  /** The worker ended on its own (an uncaught error, process.exit(), out of heap) or never started. */
  private exit(crash: { reason: string; detail: string }): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    clearTimeout(this.loadTimer);
    clearTimeout(this.idleTimer);
    const { reason, detail } = crash;
    const { logger, closed } = this.owner;
    // No user code ran yet: the error is about the worker's own files (a missing module, say), so it is logged.
    if (!this.ready && !closed) logger?.warn('transform worker could not start', { error: detail });
    if (this.calls.size === 0) {
      if (!closed) logger?.warn('idle transform worker died', { reason });
      this.owner.gone(this, []);
      return;
    }
    this.owner.events?.transformWorkerRestart();
    // The calls it was running share the blame; with none running, the call it was loading for.
    const culprits = [...this.calls.values()].filter((p) => p.started);
    if (culprits.length === 0) culprits.push(this.calls.values().next().value!);
    for (const pending of culprits) {
      logger?.warn('transform worker died during a call', pending.logFields(reason));
      this.calls.delete(pending.id);
      pending.settle({ ok: false, reason, detail });
    }
    this.reclaim(reason);
  }

  /** After the worker is gone: calls it had started fail, the others go back to the pool. */
  private reclaim(startedReason: string): void {
    const unstarted: PendingCall[] = [];
    for (const pending of this.calls.values()) {
      if (pending.started) pending.settle({ ok: false, reason: startedReason });
      else unstarted.push(pending);
    }
    this.calls.clear();
    this.owner.gone(this, unstarted);
  }

  private idle(): void {
    this.idleTimer = undefined;
    if (this.state === 'idle' && this.owner.mayRetireIdle()) {
      void this.terminate();
      this.owner.gone(this, []);
    }
  }

  /** The state that follows from the calls, and the timers that go with it. */
  private update(): void {
    if (this.state === 'dead') return;
    let runs = false;
    let waiting: PendingCall | undefined;
    for (const pending of this.calls.values()) {
      if (pending.started) {
        runs = true;
        waiting = undefined;
        break;
      }
      waiting ??= pending;
    }
    this.watchLoad(waiting);
    if (this.state === 'retiring') {
      if (this.calls.size === 0) {
        void this.terminate();
        this.owner.gone(this, []);
      }
      return;
    }
    if (this.calls.size === 0) this.worker.unref();
    if (!this.ready) return; // 'starting' until the worker's own files have loaded
    this.state = this.calls.size === 0 ? 'idle' : runs ? 'running' : 'loading';
    if (this.state === 'idle') this.retireWhenIdle();
  }

  /**
   * The load budget runs while the worker owes a call it has not started and runs none: it is loading
   * a module (or about to start the call). While a call runs, that call's own timer watches the worker.
   */
  private watchLoad(waiting: PendingCall | undefined): void {
    if (waiting === this.loading) return;
    clearTimeout(this.loadTimer);
    this.loading = waiting;
    this.loadTimer = undefined;
    if (!waiting) return;
    const budget = this.settings.loadBudgetMs;
    this.loadTimer = setTimeout(() => this.deadline(waiting, loadTimedOut(budget)), budget);
  }

  /** One timer per worker, pushed back each time the worker goes idle: a refresh per idle moment, not a timer per call. */
  private retireWhenIdle(): void {
    if (this.idleTimer) {
      this.idleTimer.refresh();
      return;
    }
    this.idleTimer = setTimeout(() => this.idle(), this.settings.idleRetireMs);
    this.idleTimer.unref();
  }
}
