// The main thread's watch on memory a call takes without ever yielding: a worker busy in synchronous
// code cannot watch its own off-heap memory (transform-worker.mjs does between awaits), so while calls
// run the process RSS is read from here. One interval for the whole pool, running only while workers
// live; each call's baseline is the RSS at the first tick it is seen running.
import type { WorkerSlot } from './worker-slot.ts';

/** How often the RSS is read while a call runs. */
const RSS_TICK_MS = 50;

export class RssGuard {
  private timer?: NodeJS.Timeout;

  /**
   * @param limitBytes growth during one call that stops its worker: the off-heap limit plus the heap a
   *   worker may legitimately fill (old generation and young semispaces), so only runaway growth trips it.
   */
  constructor(
    private readonly limitBytes: number,
    private readonly slots: () => Iterable<WorkerSlot>,
  ) {}

  /** Starts the interval if it is not running (a worker was started). */
  watch(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), RSS_TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One reading, taken only when some call runs; stops the interval once no worker lives. */
  private tick(): void {
    const slots = [...this.slots()];
    if (slots.length === 0) {
      this.stop();
      return;
    }
    let rss: number | undefined;
    for (const slot of slots) {
      for (const pending of slot.calls.values()) {
        if (!pending.started) continue;
        rss ??= process.memoryUsage.rss();
        if (pending.rssAtStart === undefined) {
          pending.rssAtStart = rss;
        } else if (rss - pending.rssAtStart > this.limitBytes) {
          slot.overMemory();
          break;
        }
      }
    }
  }
}
