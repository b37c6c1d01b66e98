// Small edits to JSON5 text that keep everything else as written: comments, quotes, layout, trailing
// commas. The text is scanned into value spans (objects, arrays, scalars with their offsets); an edit
// replaces or inserts text at those offsets, laid out like its neighbours. Callers check the result
// reads back as intended (JSON5.parse), so a scan mistake can never write a wrong config.
import { isDeepStrictEqual } from 'node:util';
import JSON5 from 'json5';

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

interface Span {
  start: number;
  end: number;
}
interface Property extends Span {
  key: string;
  /** Where the key as written ends (quotes included). */
  keyEnd: number;
  value: Node;
}
type Node =
  | (Span & { kind: 'object'; props: Property[] })
  | (Span & { kind: 'array'; items: Node[] })
  | (Span & { kind: 'scalar' });
type ObjectNode = Extract<Node, { kind: 'object' }>;
type ArrayNode = Extract<Node, { kind: 'array' }>;

export class Json5EditError extends Error {
  override readonly name = 'Json5EditError';
}

const IDENT_START = /[$_\p{L}\p{Nl}]/u;
const IDENT_PART = /[$_\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}\u200C\u200D]/u;
const INDENT_UNIT = '  ';

/** Scans JSON5 text into spans; throws Json5EditError on anything it does not understand. */
export function scan(text: string): Node {
  let i = 0;
  const fail = (what: string): never => {
    throw new Json5EditError(`${what} at offset ${i}`);
  };
  const skip = (): void => {
    for (;;) {
      const c = text[i];
      if (c === undefined) return;
      if (/\s|\uFEFF/.test(c)) i++;
      else if (text.startsWith('//', i)) {
        const nl = text.indexOf('\n', i);
        i = nl < 0 ? text.length : nl;
      } else if (text.startsWith('/*', i)) {
        const close = text.indexOf('*/', i + 2);
        if (close < 0) fail('unterminated comment');
        i = close + 2;
      } else return;
    }
  };
  const string = (): string => {
    const quote = text[i]!;
    const start = i++;
    while (i < text.length && text[i] !== quote) {
      if (text[i] === '\\') i++;
      else if (text[i] === '\n') fail('line break in a string');
      i++;
    }
    if (text[i] !== quote) fail('unterminated string');
    i++;
    return JSON5.parse<string>(text.slice(start, i));
  };
  const value = (): Node => {
    skip();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const props: Property[] = [];
      for (;;) {
        skip();
        if (text[i] === '}') break;
        const keyStart = i;
        let key: string;
        if (text[i] === '"' || text[i] === "'") key = string();
        else {
          if (!IDENT_START.test(text[i] ?? '')) fail('expected a key');
          while (i < text.length && IDENT_PART.test(text[i]!)) i++;
          key = text.slice(keyStart, i);
        }
        const keyEnd = i;
        skip();
        if (text[i] !== ':') fail('expected ":"');
        i++;
        const v = value();
        props.push({ key, start: keyStart, keyEnd, end: v.end, value: v });
        skip();
        if (text[i] === ',') i++;
        else if (text[i] !== '}') fail('expected "," or "}"');
      }
      i++;
      return { kind: 'object', start, end: i, props };
    }
    if (c === '[') {
      i++;
      const items: Node[] = [];
      for (;;) {
        skip();
        if (text[i] === ']') break;
        items.push(value());
        skip();
        if (text[i] === ',') i++;
        else if (text[i] !== ']') fail('expected "," or "]"');
      }
      i++;
      return { kind: 'array', start, end: i, items };
    }
    if (c === '"' || c === "'") {
      string();
      return { kind: 'scalar', start, end: i };
    }
    while (i < text.length && /[^\s,\]}/]/.test(text[i]!)) i++;
    if (i === start) fail('expected a value');
    JSON5.parse(text.slice(start, i)); // a number, true, false, null, Infinity, NaN: or it throws
    return { kind: 'scalar', start, end: i };
  };
  const root = value();
  skip();
  if (i !== text.length) fail('text after the value');
  return root;
}

/** The property at `path` (keys from the root object, indexes in lists), or undefined. */
function find(root: Node, path: readonly string[]): { prop?: Property; node: Node } | undefined {
  let node = root;
  let prop: Property | undefined;
  for (const key of path) {
    if (node.kind === 'array') {
      // An index: the item itself, which has no key of its own.
      const item = /^\d+$/.test(key) ? node.items[Number(key)] : undefined;
      if (!item) return undefined;
      prop = undefined;
      node = item;
      continue;
    }
    if (node.kind !== 'object') return undefined;
    // A repeated key: the last one is what JSON5 reads.
    prop = undefined;
    for (const p of node.props) if (p.key === key) prop = p;
    if (!prop) return undefined;
    node = prop.value;
  }
  return { prop, node };
}

/** The whitespace that starts the line `offset` is on. */
function indentAt(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart))![0];
}

/** After `offset`: a comma (skipping spaces), then the rest of the line if it is only a comment. */
function afterEntry(text: string, offset: number): { comma: boolean; lineEnd: number } {
  let i = offset;
  while (text[i] === ' ' || text[i] === '\t') i++;
  const comma = text[i] === ',';
  if (comma) i++;
  let j = i;
  while (text[j] === ' ' || text[j] === '\t') j++;
  if (text.startsWith('//', j)) j = text.indexOf('\n', j) < 0 ? text.length : text.indexOf('\n', j);
  return { comma, lineEnd: text[j] === '\n' || j === text.length ? j : i };
}

function renderKey(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key);
}

/** A value as the default config writes it: objects one key per line, lists and scalars inline. */
export function render(value: Json, indent: string): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => render(v, indent)).join(', ')}]`;
  const entries = Object.entries(value);
  if (!entries.length) return '{}';
  const inner = indent + INDENT_UNIT;
  return `{\n${entries.map(([k, v]) => `${inner}${renderKey(k)}: ${render(v, inner)},`).join('\n')}\n${indent}}`;
}

function splice(text: string, start: number, end: number, insert: string): string {
  return text.slice(0, start) + insert + text.slice(end);
}

/** Inserts `entry` (a "key: value" or an item) as the last entry of the object or array `node`. */
function insertLast(text: string, node: ObjectNode | ArrayNode, entry: (indent: string) => string): string {
  const entries: Span[] = node.kind === 'object' ? node.props : node.items;
  const multiLine = text.slice(node.start, node.end).includes('\n');
  const last = entries.at(-1);
  if (!last) {
    const outer = indentAt(text, node.start);
    if (node.kind === 'array' || !multiLineParent(text, node)) {
      const [open, close] = node.kind === 'object' ? [' ', ' '] : ['', ''];
      return splice(text, node.start + 1, node.end - 1, `${open}${entry(outer)}${close}`);
    }
    const inner = outer + INDENT_UNIT;
    return splice(text, node.start + 1, node.end - 1, `\n${inner}${entry(inner)},\n${outer}`);
  }
  const after = afterEntry(text, last.end);
  if (multiLine && after.lineEnd > last.end && text[after.lineEnd] === '\n') {
    const indent = indentAt(text, last.start);
    if (after.comma) return splice(text, after.lineEnd, after.lineEnd, `\n${indent}${entry(indent)},`);
    const withComma = splice(text, last.end, last.end, ',');
    const lineEnd = after.lineEnd + 1;
    return splice(withComma, lineEnd, lineEnd, `\n${indent}${entry(indent)}`);
  }
  const indent = indentAt(text, last.start);
  if (after.comma) {
    const commaEnd = text.indexOf(',', last.end) + 1;
    return splice(text, commaEnd, commaEnd, ` ${entry(indent)},`);
  }
  return splice(text, last.end, last.end, `, ${entry(indent)}`);
}

/** An empty object written on several lines, or one whose parent is: it gets one key per line. */
function multiLineParent(text: string, node: Span): boolean {
  return text.slice(node.start, node.end).includes('\n') || indentAt(text, node.start) !== '';
}

/**
 * Sets the property at `path` to `value`: the value's text replaced if the key exists, else the property
 * added as the last of its object (which must exist). An equal scalar is left as written.
 */
export function setProperty(text: string, path: readonly string[], value: Json): string {
  return place(text, path, (indent) => render(value, indent), value);
}

/** A value as written in the file (comments inside it included), and the indent of its key's line. */
export interface ValueSource {
  source: string;
  indent: string;
}

/** The value at `path` as written, or undefined when there is no such property. */
export function sourceAt(text: string, path: readonly string[]): ValueSource | undefined {
  const found = find(scan(text), path);
  if (!found?.prop) return undefined;
  return { source: text.slice(found.node.start, found.node.end), indent: indentAt(text, found.prop.start) };
}

/** Sets the property at `path` to a value taken from elsewhere (sourceAt), re-indented for its new place. */
export function setPropertySource(text: string, path: readonly string[], value: ValueSource): string {
  const reindent = (indent: string): string =>
    value.source
      .split('\n')
      .map((line, i) => (i > 0 && line.startsWith(value.indent) ? indent + line.slice(value.indent.length) : line))
      .join('\n');
  return place(text, path, reindent);
}

/** Replaces the value at `path` (an equal scalar is left as written) or adds the property last. */
function place(text: string, path: readonly string[], valueText: (indent: string) => string, value?: Json): string {
  const root = scan(text);
  const found = find(root, path);
  if (found?.prop) {
    const { node } = found;
    if (value !== undefined && node.kind === 'scalar' && JSON5.parse(text.slice(node.start, node.end)) === value)
      return text;
    return splice(text, node.start, node.end, valueText(indentAt(text, found.prop.start)));
  }
  const parent = path.length === 1 ? { node: root } : find(root, path.slice(0, -1));
  if (!parent || parent.node.kind !== 'object')
    throw new Json5EditError(`${path.slice(0, -1).join('.') || 'the file'} is not an object`);
  const key = path.at(-1)!;
  return insertLast(text, parent.node, (indent) => `${renderKey(key)}: ${valueText(indent)}`);
}

/** Adds `value` as the last item of the array at `path`. */
export function appendItem(text: string, path: readonly string[], value: Json): string {
  const found = find(scan(text), path);
  if (!found || found.node.kind !== 'array') throw new Json5EditError(`${path.join('.')} is not a list`);
  return insertLast(text, found.node, (indent) => render(value, indent));
}

/** Removes the property at `path` (its whole line when it has one to itself). */
export function deleteProperty(text: string, path: readonly string[]): string {
  const found = find(scan(text), path);
  if (!found?.prop) return text;
  const { prop } = found;
  const after = afterEntry(text, prop.end);
  const lineStart = text.lastIndexOf('\n', prop.start - 1) + 1;
  const ownLine = text.slice(lineStart, prop.start).trim() === '' && text[after.lineEnd] === '\n';
  if (ownLine) return splice(text, lineStart, after.lineEnd + 1, '');
  if (after.comma) {
    let end = text.indexOf(',', prop.end) + 1;
    while (text[end] === ' ') end++;
    return splice(text, prop.start, end, '');
  }
  // The last entry without a comma: take the comma before it.
  let start = prop.start;
  while (start > 0 && /\s/.test(text[start - 1]!)) start--;
  if (text[start - 1] === ',') start--;
  return splice(text, start, prop.end, '');
}

/** The value at `path` as parsed JSON5, or undefined. */
export function valueAt(text: string, path: readonly string[]): unknown {
  let v: unknown = JSON5.parse(text);
  for (const key of path) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, key)) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/** Two lists of objects, item for item: edited in place, so comments between the items stay. */
function sameLengthObjectLists(now: Json, value: Json): value is JsonObject[] {
  return (
    Array.isArray(now) &&
    Array.isArray(value) &&
    now.length === value.length &&
    now.every(isObject) &&
    value.every(isObject)
  );
}

/**
 * Rewrites the object at `path` from `current` to `wanted` touching only what differs: new keys added
 * last, changed scalars replaced, lists that only grew appended to, keys no longer wanted removed.
 */
export function editObject(text: string, path: string[], current: JsonObject, wanted: JsonObject): string {
  let out = text;
  for (const [key, value] of Object.entries(wanted)) {
    const at = [...path, key];
    const now = Object.hasOwn(current, key) ? current[key] : undefined;
    if (now === undefined) out = setProperty(out, at, value);
    else if (isDeepStrictEqual(now, value)) continue;
    else if (isObject(now) && isObject(value)) out = editObject(out, at, now, value);
    else if (sameLengthObjectLists(now, value))
      for (const [i, item] of value.entries())
        out = editObject(out, [...at, String(i)], (now as JsonObject[])[i]!, item);
    else if (Array.isArray(now) && Array.isArray(value) && isDeepStrictEqual(value.slice(0, now.length), now))
      for (const item of value.slice(now.length)) out = appendItem(out, at, item);
    else out = setProperty(out, at, value);
  }
  for (const key of Object.keys(current)) if (!Object.hasOwn(wanted, key)) out = deleteProperty(out, [...path, key]);
  return out;
}

/** Whether the text is strict JSON (what `jq` and JSON.parse read), not only JSON5. */
export function isStrictJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The JSON5 text in strict JSON, layout kept: keys written without quotes (or in single quotes) get
 * double quotes, and trailing commas go. For a file that was JSON before an edit added JSON5-isms;
 * comments (which strict JSON has none of) and JSON5-only values make it throw Json5EditError.
 */
export function toStrictJson(text: string): string {
  const edits: { start: number; end: number; insert: string }[] = [];
  const trailingComma = (after: number): void => {
    let i = after;
    while (/\s/.test(text[i] ?? '')) i++;
    if (text[i] === ',') edits.push({ start: i, end: i + 1, insert: '' });
  };
  const walk = (node: Node): void => {
    if (node.kind === 'object') {
      for (const p of node.props) {
        if (text[p.start] !== '"') edits.push({ start: p.start, end: p.keyEnd, insert: JSON.stringify(p.key) });
        walk(p.value);
      }
      const last = node.props.at(-1);
      if (last) trailingComma(last.end);
    } else if (node.kind === 'array') {
      for (const item of node.items) walk(item);
      const last = node.items.at(-1);
      if (last) trailingComma(last.end);
    } else if (text[node.start] === "'") {
      edits.push({
        start: node.start,
        end: node.end,
        insert: JSON.stringify(JSON5.parse<string>(text.slice(node.start, node.end))),
      });
    }
  };
  walk(scan(text));
  let out = text;
  for (const e of edits.sort((a, b) => b.start - a.start)) out = splice(out, e.start, e.end, e.insert);
  if (!isStrictJson(out)) throw new Json5EditError('the edited file cannot be written as strict JSON');
  return out;
}
