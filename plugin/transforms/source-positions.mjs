// Stack traces of transformed modules name the lines of the file as written (used by esbuild-transform.mjs).
//
// esbuild does not keep a module's line layout, and Node does not apply source maps to code that jiti
// runs through `vm`. So each transformed file's map is kept here, and once one is, the worker's
// Error.prepareStackTrace rewrites the positions of that file's frames; other frames are left as V8
// wrote them. Maps are parsed only when a stack names their file.
import { SourceMap } from 'node:module';

/** file -> { json, map?, lineShift } */
const maps = new Map();
let installed = false;

/**
 * Keeps `json` (an esbuild source map) for `file`. `lineShift`: lines the evaluated code has before
 * the map's first line.
 */
export function rememberSourceMap(file, json, lineShift) {
  maps.set(file, { json, map: undefined, lineShift });
  if (!installed) {
    installed = true;
    Error.prepareStackTrace = prepareStackTrace;
  }
}

/** V8's own format (`Name: message` and one `    at ...` line per frame), positions mapped. */
function prepareStackTrace(error, frames) {
  let head;
  try {
    head = Error.prototype.toString.call(error);
  } catch {
    head = 'Error';
  }
  let text = head;
  for (const frame of frames) text += `\n    at ${frameText(frame)}`;
  return text;
}

function frameText(frame) {
  const text = String(frame);
  const file = frame.getFileName();
  const entry = file ? maps.get(file) : undefined;
  if (!entry) return text;
  const line = frame.getLineNumber();
  const column = frame.getColumnNumber();
  try {
    entry.map ??= new SourceMap(JSON.parse(entry.json));
    // The nearest mapped position at or before the frame's (0-based both ways); not extrapolated past it,
    // since esbuild maps the start of each expression and its columns differ from the source's.
    const origin = entry.map.findEntry(line - 1 - entry.lineShift, column - 1);
    if (typeof origin?.originalLine !== 'number') return text;
    return text.replace(`${file}:${line}:${column}`, `${file}:${origin.originalLine + 1}:${origin.originalColumn + 1}`);
  } catch {
    return text;
  }
}
