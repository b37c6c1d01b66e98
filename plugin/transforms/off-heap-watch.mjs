// The worker's watch on its own memory outside the V8 heap: Buffers, ArrayBuffers, WebAssembly
// memories and the native memory Node reports to V8 (zlib streams, say) are all "external" memory of
// the worker's isolate, which its resourceLimits do not bound. Only the worker can read its own count
// (process.memoryUsage().external is per isolate; the RSS is the whole process's); it does so at most
// once per CHECK_GAP_MS so a fast call pays nothing, and a reading over the limit is confirmed after a
// full GC, since memory a transform already dropped still counts until V8 collects it. A WebAssembly
// memory counts at its full size, resident or not: that is what it may fill without asking again.
// Plain JavaScript: it runs in the worker on bare Node.
import v8 from 'node:v8';
import vm from 'node:vm';

/** At most one reading (about 15 µs: it also reads the RSS) per this many ms of calls. */
const CHECK_GAP_MS = 5;
/**
 * The collection that confirms a reading: a full, synchronous, last-resort GC. Even so V8 frees the
 * dropped ArrayBuffers on a background thread, which on a busy machine can take some ms: the count is
 * read again for up to SWEEP_WAIT_MS before the reading stands.
 */
const GC_OPTIONS = { type: 'major', execution: 'sync', flavor: 'last-resort' };
const SWEEP_WAIT_MS = 100;
const SWEEP_POLL_MS = 5;

/**
 * A forced GC, or undefined. V8 hands out `gc` only to contexts created while --expose-gc is set; a
 * worker cannot be started with that flag, so it is set just long enough to create one context.
 */
function forcedGc() {
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Watches external memory over what it was when the watch started (the worker's own, before any module). */
export function offHeapWatch(limitBytes) {
  const gc = forcedGc();
  const external = () => process.memoryUsage().external;
  const baseline = external();
  const within = () => external() - baseline <= limitBytes;
  let checkedAt = -Infinity;

  async function confirm() {
    if (!gc) return true;
    gc(GC_OPTIONS);
    for (let waited = 0; !within(); waited += SWEEP_POLL_MS) {
      if (waited >= SWEEP_WAIT_MS) return true;
      await sleep(SWEEP_POLL_MS);
    }
    return false;
  }

  /**
   * False at once when within the limit (no promise: answers keep their order); otherwise a promise of
   * whether the transform holds more than the limit even after a GC.
   */
  function overNow() {
    checkedAt = performance.now();
    return within() ? false : confirm();
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
