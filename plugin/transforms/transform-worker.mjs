// Worker-thread entry that runs transform modules for the TransformRunner (runner.ts; the slot that talks to it is worker-slot.ts).
//
// Plain JavaScript on purpose: a worker thread does not reliably inherit the main thread's TypeScript
// loader hooks (tsx) on every Node version, and the runner starts workers with an empty execArgv, so
// this file must run on bare Node. Transform modules themselves (TS or JS, ESM or CJS) load through jiti,
// which compiles what needs compiling with esbuild (esbuild-transform.mjs).
//
// Protocol (every message carries the call id; the runner ignores answers it no longer waits for):
//   in:  { type: 'call', id, file, exportName, ctx, maxOutputBytes }
//   out: { type: 'ready' }                               the worker itself loaded (sent once, first)
//        { type: 'start', id }                           the module is loaded; the transform runs now
//        { type: 'result', id, ok: true, value }         value: a plain object or null, within maxOutputBytes as JSON
//        { type: 'result', id, ok: false, code, kind?, detail? }
//        { type: 'memory' }                              off-heap memory over the limit: terminate this worker
// A failure is a code that the runner puts into words (REASONS); `detail` is the transform's own text
// (an error message, one line), which the runner keeps apart from its reason and never logs.
//
// Modules are cached per worker (file -> module namespace). The runner makes changed files visible by
// retiring workers (TransformRunner.invalidate), which also drops Node's own ESM cache for .mjs/.cjs
// modules and any state the old module left behind. Before a module is loaded its path is resolved
// again: `file` is the real path confineModule found, so if it now resolves anywhere else (a symlink
// swapped in since) it is refused and nothing is loaded; so is a file that has gained a hard link.
import { realpath, stat } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { createJiti } from 'jiti';
import { transformModule } from './esbuild-transform.mjs';
import { checkOutput } from './output-size.mjs';
import { offHeapWatch } from './off-heap-watch.mjs';

if (!parentPort) throw new Error('transform-worker.mjs must run in a worker thread');
const port = parentPort;

/** While the worker waits between calls (or an async call waits), its off-heap memory is read this often. */
const MEMORY_TICK_MS = 50;
const memory = offHeapWatch(
  Number(workerData?.maxOffHeapBytes) > 0 ? Number(workerData.maxOffHeapBytes) : 64 * 1024 * 1024,
);
let overMemory = false;
let ticking = false;
const memoryTimer = setInterval(() => {
  if (overMemory || ticking) return;
  ticking = true;
  Promise.resolve(memory.overLimitNow()).then(
    (over) => {
      ticking = false;
      if (over && !overMemory) reportMemory();
    },
    () => (ticking = false),
  );
}, MEMORY_TICK_MS);
memoryTimer.unref();

function reportMemory() {
  overMemory = true;
  clearInterval(memoryTimer);
  port.postMessage({ type: 'memory' });
}

const jiti = createJiti(import.meta.url, {
  // No runtime module cache: this worker keeps its own (below), and jiti's would also pin nested modules.
  moduleCache: false,
  // No transpile cache on disk: user code should not leave files in a shared temp folder.
  fsCache: false,
  // Raw exports: the export is picked below, the same way for ESM and CJS.
  interopDefault: false,
  sourceMaps: false,
  debug: false,
  // esbuild rather than jiti's Babel (esbuild-transform.mjs).
  transform: transformModule,
});

/** file -> Promise of the module namespace (only successful loads stay). */
const modules = new Map();

/** A detail is at most this long; only the head of a long message is read. */
const MAX_DETAIL = 200;
const READ_AT_MOST = 10_000;
const FUNCTION_OWN_KEYS = new Set(['length', 'name', 'prototype', 'caller', 'arguments']);
const hasOwn = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);

/** First non-empty line, control characters removed, at most MAX_DETAIL characters. */
function oneLine(text) {
  const line =
    String(text)
      .slice(0, READ_AT_MOST)
      .split(/\r\n|\r|\n|\u2028|\u2029/)
      .map((l) => l.replace(/[\u0000-\u001f\u007f]/g, ' ').trim())
      .find((l) => l !== '') ?? '';
  return line.length > MAX_DETAIL ? `${line.slice(0, MAX_DETAIL - 1)}…` : line;
}

function messageOf(err) {
  try {
    if (typeof err === 'string') return oneLine(err) || 'an empty string';
    if (err !== null && typeof err === 'object' && typeof err.message === 'string') {
      const text = oneLine(err.message);
      if (text) return text;
      return typeof err.name === 'string' && err.name ? oneLine(err.name) : 'an error without a message';
    }
    return `a non-error value (${err === null ? 'null' : typeof err})`;
  } catch {
    return 'an error that could not be read';
  }
}

function kindOf(value) {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'object':
      return isPlainObject(value) ? 'an object' : 'an object that is not a plain object';
    case 'function':
      return 'a function';
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'bigint':
      return 'a bigint';
    case 'symbol':
      return 'a symbol';
    default:
      return typeof value;
  }
}

function isPlainObject(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The export `name` of a loaded module, for ESM and CJS alike:
 *   default: `export default fn`, `module.exports = fn`, CJS `exports.default = fn`;
 *   named:   `export function name`, `exports.name = fn`, `module.exports = { name }`.
 */
function pickExport(ns, name) {
  if (ns === null || ns === undefined) return undefined;
  let value = hasOwn(ns, name) ? ns[name] : undefined;
  const def = hasOwn(ns, 'default') ? ns.default : undefined;
  if (value === undefined && name !== 'default' && def !== null && def !== undefined) {
    if (
      (typeof def === 'object' && hasOwn(def, name)) ||
      (typeof def === 'function' && !FUNCTION_OWN_KEYS.has(name) && hasOwn(def, name))
    ) {
      value = def[name];
    }
  }
  // CommonJS without __esModule: `exports.default = fn` arrives as { default: { default: fn } }.
  if (
    name === 'default' &&
    value !== null &&
    typeof value === 'object' &&
    hasOwn(value, 'default') &&
    typeof value.default === 'function'
  ) {
    value = value.default;
  }
  return value;
}

/** The module's path no longer resolves to itself: something on the way became a symlink. */
class MovedError extends Error {}
/** The module has another name (a hard link made since it was checked), which may lie anywhere. */
class LinkedError extends Error {}

async function confinedImport(file) {
  const real = await realpath(file);
  if (real !== file) throw new MovedError(`now resolves to ${real}`);
  if ((await stat(file)).nlink > 1) throw new LinkedError('has more than one hard link');
  return jiti.import(file);
}

function load(file) {
  let pending = modules.get(file);
  if (!pending) {
    pending = confinedImport(file);
    modules.set(file, pending);
    pending.catch(() => {
      if (modules.get(file) === pending) modules.delete(file);
    });
  }
  return pending;
}

function fail(id, code, extra = {}) {
  port.postMessage({ type: 'result', id, ok: false, code, ...extra });
}

function succeed(id, value) {
  try {
    port.postMessage({ type: 'result', id, ok: true, value });
  } catch {
    // Passed the walk but cannot be cloned after all (a proxy, a getter that changed its mind...).
    fail(id, 'not-data');
  }
}

/**
 * The off-heap reading first: within the limit (or no reading due) is a plain false, so an ordinary
 * call goes on at once, with no promise; only a reading over the limit is waited for (it runs a GC).
 */
function finish(id, value, maxOutputBytes) {
  const reading = overMemory || memory.overLimit();
  if (reading === false) {
    send(id, value, maxOutputBytes);
    return undefined;
  }
  return Promise.resolve(reading).then((over) => {
    if (!over) {
      send(id, value, maxOutputBytes);
      return;
    }
    fail(id, 'memory');
    if (!overMemory) reportMemory();
  });
}

/** The returned value checked and sent, or the failure it is. */
function send(id, value, maxOutputBytes) {
  if (value === null) {
    succeed(id, null);
    return;
  }
  if (!isPlainObject(value)) {
    fail(id, 'bad-value', { kind: kindOf(value) });
    return;
  }
  let size;
  try {
    size = checkOutput(value, maxOutputBytes);
  } catch (err) {
    fail(id, 'not-data', { detail: messageOf(err) });
    return;
  }
  if (size !== 'ok') {
    fail(id, size);
    return;
  }
  succeed(id, value);
}

async function handle(msg) {
  const { id, file, exportName, ctx, maxOutputBytes } = msg;
  let ns;
  try {
    ns = await load(file);
  } catch (err) {
    const code = err instanceof MovedError ? 'moved' : err instanceof LinkedError ? 'linked' : 'load';
    fail(id, code, { detail: messageOf(err) });
    return;
  }

  let fn;
  try {
    fn = pickExport(ns, exportName);
  } catch (err) {
    fail(id, 'load', { detail: messageOf(err) });
    return;
  }
  if (fn === undefined) {
    fail(id, 'no-export');
    return;
  }
  if (typeof fn !== 'function') {
    fail(id, 'not-function', { kind: kindOf(fn) });
    return;
  }

  port.postMessage({ type: 'start', id });
  let value;
  try {
    // A URL object, as OpenClaw's built-in hooks give it (it cannot cross postMessage as one).
    value = await fn(typeof ctx.url === 'string' ? { ...ctx, url: new URL(ctx.url) } : ctx);
  } catch (err) {
    fail(id, 'threw', { detail: messageOf(err) });
    return;
  }
  return finish(id, value, maxOutputBytes);
}

// This file and its imports loaded: a death before this message is the worker failing to start.
port.postMessage({ type: 'ready' });

port.on('message', (msg) => {
  if (!msg || msg.type !== 'call' || typeof msg.id !== 'number') return;
  if (typeof msg.file !== 'string' || typeof msg.exportName !== 'string' || !(msg.maxOutputBytes > 0)) {
    fail(msg.id, 'malformed');
    return;
  }
  handle(msg).catch((err) => {
    fail(msg.id, 'failed', { detail: messageOf(err) });
  });
});
