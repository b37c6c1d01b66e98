// A mapping's filters (match.headers, match.body, match.events): conditions compiled once per config
// that a verified, parsed request must all meet for the mapping to take it. The live path asks only
// which condition failed first, allocating nothing; the dry run shows it, with the value it saw.
import type { IncomingHttpHeaders } from 'node:http';
import { compilePath } from './template.ts';
import { eventReaderFor, NAMING_SCHEMES, type EventReader } from '../verify/event-names.ts';
import type { Scheme } from '../verify/verifier.ts';

/** A value a condition compares: header values as strings, body values as JSON values. */
export type ConditionValue = string | number | boolean | null;

/** As written: a value (equals) or one of { in }, { notIn }, { exists }, { prefix }. */
export type ConditionConfig =
  string | number | boolean | { in?: ConditionValue[]; notIn?: ConditionValue[]; exists?: boolean; prefix?: string };

export interface FilterConfig {
  headers?: Record<string, ConditionConfig>;
  body?: Record<string, ConditionConfig>;
  events?: string[];
}

/** One compiled condition; `key` and `text` name it for the dry run. */
export interface Condition {
  /** Where it is configured, e.g. `hooks.mappings[0] (id "gh").match.body["pull_request.merged"]`. */
  readonly key: string;
  /** The condition as configured, e.g. `{ in: ["opened","reopened"] }`. */
  readonly text: string;
  holds(headers: IncomingHttpHeaders, payload: Record<string, unknown>): boolean;
  /** What the request had there (a header's value, a body field, the event name); for the dry run. */
  seen(headers: IncomingHttpHeaders, payload: Record<string, unknown>): unknown;
}

export interface MappingFilter {
  readonly conditions: readonly Condition[];
}

/** The first condition `filter` finds not met, or undefined when all hold. */
export function failingCondition(
  filter: MappingFilter,
  headers: IncomingHttpHeaders,
  payload: Record<string, unknown>,
): Condition | undefined {
  for (const condition of filter.conditions) if (!condition.holds(headers, payload)) return condition;
  return undefined;
}

type Read = (headers: IncomingHttpHeaders, payload: Record<string, unknown>) => unknown;

const CONDITION_SHAPE =
  'a condition is a string or number (equals), { in: [...] }, { notIn: [...] }, { exists: true|false } or { prefix: "..." }';

/**
 * The mapping's filter, or undefined when it has none. `scheme` is its verify scheme (events are named
 * the way that sender names them); `hidden` the headers no condition may read (credentials, proofs).
 */
export function compileFilter(
  match: FilterConfig,
  where: string,
  scheme: Scheme | undefined,
  hidden: ReadonlySet<string>,
  problems: string[],
): MappingFilter | undefined {
  const conditions: Condition[] = [];
  if (match.events !== undefined) {
    const events = compileEvents(match.events, `${where}.match.events`, scheme, problems);
    if (events) conditions.push(events);
  }
  for (const [name, config] of Object.entries(match.headers ?? {})) {
    const lower = name.toLowerCase();
    const key = `${where}.match.headers[${JSON.stringify(name)}]`;
    if (hidden.has(lower)) {
      problems.push(`${key}: the header carries a credential or a signature; no condition may read it`);
      continue;
    }
    const read: Read = (headers) => headerValue(headers, lower);
    const condition = compileCondition(config, key, read, true, problems);
    if (condition) conditions.push(condition);
  }
  for (const [path, config] of Object.entries(match.body ?? {})) {
    const key = `${where}.match.body[${JSON.stringify(path)}]`;
    let lookup: (payload: unknown) => unknown;
    try {
      lookup = compilePath(path);
    } catch {
      problems.push(`${key}: the path must be names, dots and [index], e.g. "pull_request.base.ref"`);
      continue;
    }
    const condition = compileCondition(config, key, (_headers, payload) => lookup(payload), false, problems);
    if (condition) conditions.push(condition);
  }
  return conditions.length === 0 ? undefined : Object.freeze({ conditions: Object.freeze(conditions) });
}

/** A header as a string (a repeated one joined as Node joins most), undefined when absent. */
function headerValue(headers: IncomingHttpHeaders, lower: string): string | undefined {
  const v = Object.hasOwn(headers, lower) ? headers[lower] : undefined;
  return Array.isArray(v) ? v.join(', ') : v;
}

function isValue(v: unknown): v is ConditionValue {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** Header values compare as strings (a number configured for a header means its text). */
function compileCondition(
  config: unknown,
  key: string,
  read: Read,
  asString: boolean,
  problems: string[],
): Condition | undefined {
  const text = JSON.stringify(config);
  const norm = (v: ConditionValue): ConditionValue => (asString && v !== null ? String(v) : v);
  const make = (holds: (value: unknown) => boolean, shown = text): Condition => ({
    key,
    text: shown,
    holds: (headers, payload) => holds(read(headers, payload)),
    seen: read,
  });
  if (typeof config === 'string' || typeof config === 'number' || typeof config === 'boolean') {
    const expected = norm(config);
    return make((value) => value === expected);
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    problems.push(`${key}: ${CONDITION_SHAPE}`);
    return undefined;
  }
  const entries = Object.entries(config);
  if (entries.length !== 1) {
    problems.push(`${key}: ${CONDITION_SHAPE}, one per field`);
    return undefined;
  }
  const [kind, arg] = entries[0]!;
  switch (kind) {
    case 'in':
    case 'notIn': {
      if (!Array.isArray(arg) || arg.length === 0 || !arg.every(isValue)) {
        problems.push(`${key}.${kind} must be a non-empty list of strings, numbers, booleans or null`);
        return undefined;
      }
      const set = new Set(arg.map(norm));
      // notIn holds for a missing field too.
      return kind === 'in'
        ? make((value) => value !== undefined && set.has(value as ConditionValue))
        : make((value) => value === undefined || !set.has(value as ConditionValue));
    }
    case 'exists':
      if (typeof arg !== 'boolean') break;
      return arg ? make((value) => value !== undefined) : make((value) => value === undefined);
    case 'prefix':
      if (typeof arg !== 'string') break;
      return make((value) => typeof value === 'string' && value.startsWith(arg));
  }
  problems.push(`${key}: ${CONDITION_SHAPE}`);
  return undefined;
}

/** `*` stands for one trailing segment, after a dot (or a slash: Shopify's topics). */
function compileEvents(
  patterns: readonly unknown[],
  key: string,
  scheme: Scheme | undefined,
  problems: string[],
): Condition | undefined {
  const reader: EventReader | undefined = scheme && eventReaderFor(scheme);
  if (!reader) {
    problems.push(
      `${key} needs verify.scheme one of ${NAMING_SCHEMES.join(', ')}: the event is named as the signed sender names it` +
        (scheme ? ` (${scheme} names none)` : ''),
    );
    return undefined;
  }
  const exact = new Set<string>();
  /** A name that also takes one action after it: `pull_request` takes `pull_request.opened`. */
  const withAction: string[] = [];
  /** `invoice.` of `invoice.*`: one segment must follow. */
  const oneMore: string[] = [];
  const before = problems.length;
  patterns.forEach((pattern, i) => {
    if (typeof pattern !== 'string' || pattern.trim() === '') {
      problems.push(`${key}[${i}] must be an event name`);
      return;
    }
    const star = pattern.indexOf('*');
    if (star >= 0) {
      const sep = pattern[star - 1];
      if (star !== pattern.length - 1 || star < 2 || (sep !== '.' && sep !== '/')) {
        problems.push(
          `${key}[${i}] ${JSON.stringify(pattern)}: * may only stand for a last segment, as in "invoice.*"`,
        );
        return;
      }
      oneMore.push(pattern.slice(0, -1));
      return;
    }
    exact.add(pattern);
    if (!pattern.includes('.')) withAction.push(`${pattern}.`);
  });
  if (problems.length !== before) return undefined;
  const matches = (event: unknown): boolean => {
    if (typeof event !== 'string') return false;
    if (exact.has(event)) return true;
    for (const p of withAction) if (event.startsWith(p) && lastSegment(event, p.length)) return true;
    for (const p of oneMore) if (event.startsWith(p) && lastSegment(event, p.length)) return true;
    return false;
  };
  return {
    key,
    text: JSON.stringify(patterns),
    holds: (headers, payload) => matches(reader(headers, payload)),
    seen: reader,
  };
}

/** Whether event[from..] is one segment: not empty, no dot or slash in it. */
function lastSegment(event: string, from: number): boolean {
  if (from >= event.length) return false;
  for (let i = from; i < event.length; i++) {
    const c = event.charCodeAt(i);
    if (c === 0x2e || c === 0x2f) return false;
  }
  return true;
}
