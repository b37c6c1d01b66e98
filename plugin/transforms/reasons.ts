// The words for why a transform call failed. A reason is fixed text built here from a failure code and
// what the runner itself knows (the export name from the config, a limit, a time budget): nothing a
// transform wrote or threw ever reaches it, so it is safe to log and to answer with. What the transform
// said (an error message) travels beside it as `detail`, for operator tools only.
import { truncate } from '../util/text.ts';

/** Failure codes the worker sends (transform-worker.mjs). */
export type WorkerFailureCode =
  | 'moved'
  | 'linked'
  | 'load'
  | 'no-export'
  | 'not-function'
  | 'threw'
  | 'bad-value'
  | 'not-data'
  | 'too-large'
  | 'memory'
  | 'malformed'
  | 'failed';

/** What the worker may say a value is (its kindOf); anything else is not repeated. */
const KINDS = new Set([
  'undefined',
  'null',
  'an array',
  'an object',
  'an object that is not a plain object',
  'a function',
  'a string',
  'a number',
  'a boolean',
  'a bigint',
  'a symbol',
]);

export const MEMORY_REASON = 'the transform used too much memory';

/** "2 s" for whole seconds, else "300 ms". */
export function duration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

export function timedOut(ms: number): string {
  return `the transform timed out after ${duration(ms)}`;
}

export function loadTimedOut(ms: number): string {
  return `the transform module did not load within ${duration(ms)}`;
}

/** For calls started on a worker that was stopped because of another call on it. */
export function stoppedWithWorker(why: 'ran out of time' | 'used too much memory'): string {
  return `the transform was stopped with its worker: another call on it ${why}`;
}

/** An export name from the config, quoted on one line and short. */
function exportShown(name: string): string {
  const quoted = JSON.stringify(name.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, ' '));
  return quoted.length > 80 ? `${quoted.slice(0, 77)}..."` : quoted;
}

export function workerFailure(code: unknown, exportName: string, kind: unknown, maxOutputBytes: number): string {
  const what = typeof kind === 'string' && KINDS.has(kind) ? kind : 'a value of another kind';
  switch (code as WorkerFailureCode) {
    case 'moved':
      return 'the transform module was not loaded: its path now leads somewhere else (a symlink swapped in since it was checked)';
    case 'linked':
      return 'the transform module was not loaded: it has more than one hard link (another name for it may lie outside the transforms dir)';
    case 'load':
      return 'the transform module could not be loaded';
    case 'no-export':
      return `the transform module has no export ${exportShown(exportName)}`;
    case 'not-function':
      return `the transform module's export ${exportShown(exportName)} is ${what}, not a function`;
    case 'threw':
      return 'the transform threw an error';
    case 'bad-value':
      return `the transform returned ${what}, expected an object or null`;
    case 'not-data':
      return 'the transform returned something that is not plain JSON data (a function, a symbol, a class instance or similar)';
    case 'too-large':
      return `the transform returned more than ${maxOutputBytes} bytes`;
    case 'memory':
      return MEMORY_REASON;
    case 'malformed':
      return 'the transform call was malformed';
    default:
      return 'the transform failed';
  }
}

/**
 * The first non-empty line of `text` (only its head is read), control characters as spaces, clipped to
 * `max`: how a transform's own words are kept as a detail.
 */
export function firstLine(text: string, max: number): string {
  const line =
    text
      .slice(0, 10_000)
      .split(/\r\n|\r|\n|\u2028|\u2029/)
      .map((l) => l.replace(/[\u0000-\u001f\u007f]/g, ' ').trim())
      .find((l) => l !== '') ?? '';
  return truncate(line, max);
}

/** Why a worker ended on its own, and what it said (kept as detail: an uncaught error is the transform's text). */
export function workerCrash(err: Error | undefined, exitCode?: number): { reason: string; detail: string } {
  if (!err)
    return { reason: 'the transform worker stopped unexpectedly', detail: `worker exited with code ${exitCode}` };
  const code = (err as { code?: unknown }).code;
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') return { reason: MEMORY_REASON, detail: 'the worker ran out of heap' };
  const line = firstLine(typeof err.message === 'string' ? err.message : '', 200);
  return { reason: 'the transform crashed its worker', detail: line || String(code ?? 'unknown error') };
}
