// The worker's watch on its own off-heap memory: Buffers and ArrayBuffers a transform allocates live
// outside the V8 heap, so the worker's resourceLimits do not bound them. Only the worker can read its
// own count (process.memoryUsage().arrayBuffers is per thread); it does so at most once per CHECK_GAP_MS
// so a fast call pays nothing, and a reading over the limit is confirmed after a full GC, since
// ArrayBuffers a transform already dropped still count until V8 collects them.
// Plain JavaScript: it runs in the worker on bare Node.
import v8 from 'node:v8';
import vm from 'node:vm';

/** At most one reading (about 15 µs: it also reads the RSS) per this many ms of calls. */
const CHECK_GAP_MS = 5;

/**
 * A forced full GC, or undefined. V8 hands out `gc` only to contexts created while --expose-gc is set;
 * a worker cannot be started with that flag, so it is set just long enough to create one context.
 */
function fullGc() {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc');
    return typeof gc === 'function' ? gc : undefined;
  } catch {
    return undefined;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
}

/** Watches ArrayBuffer memory over what it was when the watch started (the worker's own, before any module). */
export function offHeapWatch(limitBytes) {
  const gc = fullGc();
  const arrayBuffers = () => process.memoryUsage().arrayBuffers;
  const baseline = arrayBuffers();
  let checkedAt = -Infinity;

  /** True when the transform holds more than the limit, even after a GC. */
  function overNow() {
    checkedAt = performance.now();
    if (arrayBuffers() - baseline <= limitBytes) return false;
    if (!gc) return true;
    gc();
    return arrayBuffers() - baseline > limitBytes;
  }

  return {
    /** For the end of each call: a reading only if the last one is CHECK_GAP_MS old. */
    overLimit() {
      return performance.now() - checkedAt >= CHECK_GAP_MS ? overNow() : false;
    },
    /** For a timer: always reads. */
    overLimitNow: overNow,
  };
}
