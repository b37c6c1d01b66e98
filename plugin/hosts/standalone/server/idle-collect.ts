// Gives memory back once the gateway is idle. V8 shrinks its heap only when it collects, and an idle
// process allocates nothing that would make it collect: after a burst, the heap the burst grew stayed
// committed until the next one. With `gc` exposed (bin/hookgate runs node with --expose-gc), one full
// collection runs once the process has been idle for a check's interval, when its heap has grown by
// GROWN_BYTES since the last collection; V8 then releases the pages it emptied.
import { getHeapStatistics } from 'node:v8';
import type { Logger } from '../../../host.ts';

/** How often the process is looked at: idle means under IDLE_SHARE of a core through one interval. */
export const IDLE_CHECK_MS = 10_000;
const IDLE_SHARE = 0.02;
/** A heap grown by less than this since the last collection is left alone. */
export const GROWN_BYTES = 8 * 1024 * 1024;

const MB = 1024 * 1024;

/** What the collector reads and does; the process's own by default (tests pass their own). */
export interface IdleCollectParts {
  /** CPU microseconds the process has used (user + system). */
  cpuMicros(): number;
  /** Bytes V8 has committed for the heap. */
  heapBytes(): number;
  /** A full collection; undefined when node was not started with --expose-gc. */
  collect: (() => void) | undefined;
  intervalMs: number;
}

function processParts(): IdleCollectParts {
  const exposed = (globalThis as { gc?: () => void }).gc;
  return {
    cpuMicros() {
      const { user, system } = process.cpuUsage();
      return user + system;
    },
    heapBytes: () => getHeapStatistics().total_heap_size,
    collect: typeof exposed === 'function' ? () => exposed() : undefined,
    intervalMs: IDLE_CHECK_MS,
  };
}

/** Starts the checks (an unref'd timer: it never keeps the process alive); `stop` ends them. */
export function collectWhenIdle(logger: Logger, parts: IdleCollectParts = processParts()): { stop(): void } {
  const { collect } = parts;
  if (!collect) return { stop() {} };
  let cpuBefore = parts.cpuMicros();
  let heapAfterLast = parts.heapBytes();
  const timer = setInterval(() => {
    const cpuNow = parts.cpuMicros();
    const busy = cpuNow - cpuBefore > parts.intervalMs * 1000 * IDLE_SHARE;
    cpuBefore = cpuNow;
    const heap = parts.heapBytes();
    if (busy || heap - heapAfterLast < GROWN_BYTES) return;
    collect();
    heapAfterLast = parts.heapBytes();
    // The collection's own CPU is not the next interval's.
    cpuBefore = parts.cpuMicros();
    logger.info('memory given back once idle', {
      heapMb: Math.round(heap / MB),
      afterMb: Math.round(heapAfterLast / MB),
    });
  }, parts.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
