// Mapping templates: `{{a.b[0].c}}` over the payload, plus `{{headers.x-name}}`, `{{query.x}}`,
// `{{path}}` and `{{now}}`. Compiled once per config into literal and lookup parts; rendering walks
// own properties only, so __proto__, constructor and prototype never resolve. Credentials never reach
// a prompt, whatever a template asks for.
import { SECRET_HEADERS } from '../auth/secret-headers.ts';

export interface TemplateContext {
  payload: unknown;
  /** Lower-cased request headers. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  query: URLSearchParams;
  /** The hook name (sub-path after hooks.path). */
  path: string;
  /** With forEach: the item of the array this action is for, and its index. */
  item?: unknown;
  index?: number;
}

export interface Template {
  readonly source: string;
  /** True when the template has no placeholder: render() always gives the same text. */
  readonly isStatic: boolean;
  /** True when it reads {{item…}} or {{index}}: it renders differently for each forEach item. */
  readonly perItem: boolean;
  render(ctx: TemplateContext): string;
}

type Part = string | ((ctx: TemplateContext) => unknown);

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const SEGMENT = /^(?:[A-Za-z0-9_$-]+|\[\d+\])/;
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

class TemplateError extends Error {}

/** Splits `a.b[0].c` into ['a', 'b', 0, 'c']; throws TemplateError on anything else. */
function parsePath(expr: string): (string | number)[] {
  const out: (string | number)[] = [];
  let rest = expr;
  while (rest.length > 0) {
    const m = SEGMENT.exec(rest);
    if (!m) throw new TemplateError(`"{{${expr}}}" is not a valid placeholder (use names, dots and [index])`);
    const seg = m[0];
    out.push(seg.startsWith('[') ? Number(seg.slice(1, -1)) : seg);
    rest = rest.slice(seg.length);
    if (rest.startsWith('.')) {
      rest = rest.slice(1);
      if (rest === '') throw new TemplateError(`"{{${expr}}}" ends with a dot`);
    } else if (rest.length > 0 && !rest.startsWith('[')) {
      throw new TemplateError(`"{{${expr}}}" is not a valid placeholder`);
    }
  }
  if (out.length === 0) throw new TemplateError('"{{}}" is empty');
  return out;
}

function lookup(value: unknown, path: readonly (string | number)[]): unknown {
  let cur = value;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (typeof key === 'string' && FORBIDDEN.has(key)) return undefined;
    if (!Object.hasOwn(cur, key)) return undefined;
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return cur;
}

function getter(expr: string, hidden: ReadonlySet<string>): (ctx: TemplateContext) => unknown {
  const path = parsePath(expr);
  const [root, ...rest] = path;
  if (root === 'path' && rest.length === 0) return (ctx) => ctx.path;
  if (root === 'now' && rest.length === 0) return () => new Date().toISOString();
  // Outside a forEach, item and index are payload fields like any other.
  if (root === 'index' && rest.length === 0)
    return (ctx) => (ctx.index === undefined ? lookup(ctx.payload, path) : ctx.index);
  if (root === 'item') return (ctx) => (ctx.index === undefined ? lookup(ctx.payload, path) : lookup(ctx.item, rest));
  if (root === 'headers' && rest.length === 1 && typeof rest[0] === 'string') {
    const name = rest[0].toLowerCase();
    if (hidden.has(name) || FORBIDDEN.has(name)) return () => undefined;
    return (ctx) => {
      // Own headers only: the headers object inherits from Object.prototype.
      const v = Object.hasOwn(ctx.headers, name) ? ctx.headers[name] : undefined;
      return Array.isArray(v) ? v.join(', ') : v;
    };
  }
  if (root === 'query' && rest.length === 1 && typeof rest[0] === 'string') {
    const name = rest[0];
    return (ctx) => ctx.query.get(name) ?? undefined;
  }
  const inPayload = root === 'payload' ? rest : path;
  return (ctx) => lookup(ctx.payload, inPayload);
}

function show(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** hidden: headers no placeholder may read (credentials and signatures). */
export function compileTemplate(source: string, hidden: ReadonlySet<string> = SECRET_HEADERS): Template {
  const parts: Part[] = [];
  let last = 0;
  for (const m of source.matchAll(PLACEHOLDER)) {
    if (m.index > last) parts.push(source.slice(last, m.index));
    parts.push(getter(m[1]!, hidden));
    last = m.index + m[0].length;
  }
  if (last < source.length) parts.push(source.slice(last));
  const isStatic = parts.every((p) => typeof p === 'string');
  if (isStatic) {
    const text = parts.join('');
    return { source, isStatic, perItem: false, render: () => text };
  }
  return {
    source,
    isStatic,
    perItem: [...source.matchAll(PLACEHOLDER)].some((m) => /^(item\b|index$)/.test(m[1]!.trim())),
    render(ctx) {
      let out = '';
      for (const p of parts) out += typeof p === 'string' ? p : show(p(ctx));
      return out;
    },
  };
}

/** A payload path (`a.b[0]`) read with the same rules as a placeholder: own properties only. */
export function compilePath(expr: string): (value: unknown) => unknown {
  const path = parsePath(expr);
  return (value) => lookup(value, path);
}
