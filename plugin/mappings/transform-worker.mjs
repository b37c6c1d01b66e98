// Worker-thread entry that runs transform modules for the TransformRunner (transform-runner.ts).
//
// Plain JavaScript on purpose: a worker thread does not reliably inherit the main thread's TypeScript
// loader hooks (tsx) on every Node version, and the runner starts workers with an empty execArgv, so
// this file must run on bare Node. Transform modules themselves (TS or JS, ESM or CJS) load through jiti.
//
// Protocol (every message carries the call id; the runner ignores answers it no longer waits for):
//   in:  { type: 'call', id, file, exportName, ctx }
//   out: { type: 'start', id }                      the module is loaded; the transform runs now
//        { type: 'result', id, ok: true, value }    value: a plain object or null
//        { type: 'result', id, ok: false, reason }  one line, no stack, no payload content
//
// Modules are cached per worker (file -> module namespace). The runner makes changed files visible by
// retiring workers (TransformRunner.invalidate), which also drops Node's own ESM cache for .mjs/.cjs
// modules and any state the old module left behind.
import { parentPort } from 'node:worker_threads';
import { createJiti } from 'jiti';

if (!parentPort) throw new Error('transform-worker.mjs must run in a worker thread');
const port = parentPort;

const jiti = createJiti(import.meta.url, {
  // No runtime module cache: this worker keeps its own (below), and jiti's would also pin nested modules.
  moduleCache: false,
  // No transpile cache on disk: user code should not leave files in a shared temp folder.
  fsCache: false,
  // Raw exports: the export is picked below, the same way for ESM and CJS.
  interopDefault: false,
  sourceMaps: false,
  debug: false,
});

/** file -> Promise of the module namespace (only successful loads stay). */
const modules = new Map();

const MAX_REASON = 200;
const FUNCTION_OWN_KEYS = new Set(['length', 'name', 'prototype', 'caller', 'arguments']);
const hasOwn = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);

/** First non-empty line, control characters removed, at most MAX_REASON characters. */
function oneLine(text) {
  const line =
    String(text)
      .split(/\r\n|\r|\n|\u2028|\u2029/)
      .map((l) => l.replace(/[\u0000-\u001f\u007f]/g, ' ').trim())
      .find((l) => l !== '') ?? '';
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON - 1)}…` : line;
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
    if ((typeof def === 'object' && hasOwn(def, name)) || (typeof def === 'function' && !FUNCTION_OWN_KEYS.has(name) && hasOwn(def, name))) {
      value = def[name];
    }
  }
  // CommonJS without __esModule: `exports.default = fn` arrives as { default: { default: fn } }.
  if (name === 'default' && value !== null && typeof value === 'object' && hasOwn(value, 'default') && typeof value.default === 'function') {
    value = value.default;
  }
  return value;
}

function load(file) {
  let pending = modules.get(file);
  if (!pending) {
    pending = jiti.import(file);
    modules.set(file, pending);
    pending.catch(() => {
      if (modules.get(file) === pending) modules.delete(file);
    });
  }
  return pending;
}

function answer(id, body) {
  try {
    port.postMessage({ type: 'result', id, ...body });
  } catch {
    // The value survived the plain-object check but holds something that cannot be cloned
    // (a function, a symbol, a proxy, a getter that throws...).
    port.postMessage({
      type: 'result',
      id,
      ok: false,
      reason: 'transform returned an object holding values that cannot be passed back (functions, symbols or similar)',
    });
  }
}

async function handle(msg) {
  const { id, file, exportName, ctx } = msg;
  let ns;
  try {
    ns = await load(file);
  } catch (err) {
    answer(id, { ok: false, reason: `transform could not be loaded: ${messageOf(err)}` });
    return;
  }

  let fn;
  try {
    fn = pickExport(ns, exportName);
  } catch (err) {
    answer(id, { ok: false, reason: `transform could not be loaded: ${messageOf(err)}` });
    return;
  }
  if (fn === undefined) {
    answer(id, { ok: false, reason: `module has no export "${oneLine(exportName)}"` });
    return;
  }
  if (typeof fn !== 'function') {
    answer(id, { ok: false, reason: `export "${oneLine(exportName)}" is ${kindOf(fn)}, expected a function` });
    return;
  }

  port.postMessage({ type: 'start', id });
  let value;
  try {
    value = await fn(ctx);
  } catch (err) {
    answer(id, { ok: false, reason: `transform threw: ${messageOf(err)}` });
    return;
  }
  if (value === null) {
    answer(id, { ok: true, value: null });
    return;
  }
  if (!isPlainObject(value)) {
    answer(id, { ok: false, reason: `transform returned ${kindOf(value)}, expected an object or null` });
    return;
  }
  answer(id, { ok: true, value });
}

port.on('message', (msg) => {
  if (!msg || msg.type !== 'call' || typeof msg.id !== 'number') return;
  if (typeof msg.file !== 'string' || typeof msg.exportName !== 'string') {
    answer(msg.id, { ok: false, reason: 'transform call is malformed' });
    return;
  }
  handle(msg).catch((err) => {
    answer(msg.id, { ok: false, reason: `transform failed: ${messageOf(err)}` });
  });
});
