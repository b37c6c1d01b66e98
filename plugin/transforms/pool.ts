// The pool of worker slots: a bounded queue of calls waiting for a worker, the choice of a worker for
// each call, and the pump that hands queued calls out whenever a slot frees up or goes away.
//
// A call goes to the least busy worker that has room (fewer than `pipeline` calls handed to it) and is
// not stalled (running a call and silent for a while). Another worker is started (up to `workers`)
// only when every worker is stalled, or none lives; otherwise the call waits in the queue. One worker
// serves a steady load (handing it its next calls before it has answered the last keeps it from idling
// while the main thread serves HTTP); a second one starts when a transform hogs the first.
import type { PendingCall } from './call.ts';
import { RssGuard } from './rss-guard.ts';
import { WorkerSlot, type SlotOwner, type SlotSettings } from './worker-slot.ts';

export interface PoolSettings extends SlotSettings {
  readonly workers: number;
  readonly maxQueue: number;
  readonly pipeline: number;
  /** RSS growth during one call that stops its worker. */
  readonly rssGuardBytes: number;
}

export class WorkerPool implements SlotOwner {
  readonly slots = new Set<WorkerSlot>();
  readonly queue: PendingCall[] = [];
  closed = false;
  private readonly rss: RssGuard;

  constructor(
    private readonly settings: PoolSettings,
    readonly logger: SlotOwner['logger'],
    readonly events: SlotOwner['events'],
  ) {
    this.rss = new RssGuard(settings.rssGuardBytes, () => this.slots);
  }

  /** A worker now, a place in the queue, or a failure when neither is possible. */
  submit(pending: PendingCall): void {
    let slot: WorkerSlot | undefined;
    try {
      slot = this.pick();
    } catch {
      pending.settle({ ok: false, reason: 'transform worker could not be started' });
      return;
    }
    if (slot) slot.take(pending);
    else if (this.queue.length >= this.settings.maxQueue)
      pending.settle({ ok: false, reason: 'transform queue is full' });
    else this.queue.push(pending);
  }

  /** Every worker retires: idle ones now, busy ones when their calls end (they take no new ones). */
  retireAll(): void {
    for (const slot of [...this.slots]) void slot.retire();
  }

  /** Terminates every worker; waiting and running calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    this.rss.stop();
    const closed = { ok: false, reason: 'transform runner is closed' } as const;
    for (const pending of this.queue.splice(0)) pending.settle(closed);
    const exits: Promise<unknown>[] = [];
    for (const slot of [...this.slots]) {
      this.slots.delete(slot);
      exits.push(slot.terminate());
      for (const pending of slot.calls.values()) pending.settle(closed);
    }
    await Promise.all(exits);
  }

  freed(): void {
    this.pump();
  }

  gone(slot: WorkerSlot, unstarted: PendingCall[]): void {
    this.slots.delete(slot);
    this.queue.unshift(...unstarted);
    this.pump();
  }

  mayRetireIdle(): boolean {
    return this.queue.length === 0;
  }

  /**
   * The least busy healthy worker with room; a new worker only when none is healthy (all stalled, or
   * none yet); undefined when the call must wait. Throws if a worker cannot be created.
   */
  private pick(): WorkerSlot | undefined {
    let best: WorkerSlot | undefined;
    let healthy = false;
    const now = performance.now();
    for (const slot of this.slots) {
      if (slot.state === 'retiring' || slot.state === 'dead') continue;
      const busy = slot.calls.size;
      if (busy === 0) return slot;
      if (slot.stalled(now)) continue;
      healthy = true;
      if (busy < this.settings.pipeline && (!best || busy < best.calls.size)) best = slot;
    }
    return best ?? (healthy ? undefined : this.spawn());
  }

  /** A new worker, or undefined when the pool is full (or closed); throws if a worker cannot be created. */
  private spawn(): WorkerSlot | undefined {
    if (this.closed || this.slots.size >= this.settings.workers) return undefined;
    const slot = new WorkerSlot(this, this.settings);
    this.slots.add(slot);
    this.rss.watch();
    return slot;
  }

  /** Hand queued calls to idle (or new) workers. */
  private pump(): void {
    while (this.queue.length > 0 && !this.closed) {
      let slot: WorkerSlot | undefined;
      try {
        slot = this.pick();
      } catch {
        // No worker can be started; fail what waits rather than letting it hang (busy workers, if
        // any, keep serving: only calls that no worker will ever take are failed).
        if (this.slots.size === 0) {
          for (const pending of this.queue.splice(0))
            pending.settle({ ok: false, reason: 'transform worker could not be started' });
        }
        return;
      }
      if (!slot) return;
      const next = this.queue.shift();
      if (next) slot.take(next);
    }
  }
}
