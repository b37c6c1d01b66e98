// Which mapping owns a request: the hook name narrows the candidates before the body is read, and
// the payload picks one among them: the first in config order whose `source` and filters hold.
import type { IncomingHttpHeaders } from 'node:http';
import type { CompiledMapping, MappingIndex } from './mapping.ts';
import { failingCondition } from './filters.ts';

export function indexMappings(mappings: readonly CompiledMapping[]): MappingIndex {
  const byName = new Map<string, readonly CompiledMapping[]>();
  for (const m of mappings) {
    const name = m.matchPath;
    if (name === undefined || byName.has(name)) continue;
    // A signed name is its mappings' alone (they share its verify): mappings for any name do not answer it.
    byName.set(
      name,
      mappings.filter((x) => x.matchPath === name || (x.matchPath === undefined && !m.verifier)),
    );
  }
  return { byName, anyName: mappings.filter((m) => m.matchPath === undefined) };
}

/** Mappings that could own this name, in config order; the payload decides among them. */
export function candidatesFor(name: string, index: MappingIndex): readonly CompiledMapping[] {
  return index.byName.get(name) ?? index.anyName;
}

/** Whether `m` takes the request: its match.source, then its filters. */
export function takes(m: CompiledMapping, headers: IncomingHttpHeaders, payload: Record<string, unknown>): boolean {
  if (m.matchSource !== undefined && m.matchSource !== payload.source) return false;
  return m.filter === undefined || failingCondition(m.filter, headers, payload) === undefined;
}

/** The first mapping in order that takes the request. */
export function pickMapping(
  candidates: readonly CompiledMapping[],
  headers: IncomingHttpHeaders,
  payload: Record<string, unknown>,
): CompiledMapping | undefined {
  for (const m of candidates) if (takes(m, headers, payload)) return m;
  return undefined;
}
