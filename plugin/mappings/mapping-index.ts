// Which mapping owns a request: the hook name narrows the candidates before the body is read, and
// the payload's `source` picks one among them.
import type { CompiledMapping, MappingIndex } from './mapping.ts';

export function indexMappings(mappings: readonly CompiledMapping[]): MappingIndex {
  const byName = new Map<string, readonly CompiledMapping[]>();
  for (const m of mappings) {
    const name = m.matchPath;
    if (name === undefined || byName.has(name)) continue;
    // A signed name is its mapping's alone: mappings for any name do not answer it.
    if (m.verifier) byName.set(name, [m]);
    else
      byName.set(
        name,
        mappings.filter((x) => x.matchPath === undefined || x.matchPath === name),
      );
  }
  return { byName, anyName: mappings.filter((m) => m.matchPath === undefined) };
}

/** Mappings that could own this name, in config order; the payload decides among them. */
export function candidatesFor(name: string, index: MappingIndex): readonly CompiledMapping[] {
  return index.byName.get(name) ?? index.anyName;
}

/** The first mapping in order whose source matches the payload's `source`. */
export function pickMapping(
  candidates: readonly CompiledMapping[],
  payload: Record<string, unknown>,
): CompiledMapping | undefined {
  const source = typeof payload.source === 'string' ? payload.source : undefined;
  return candidates.find((m) => m.matchSource === undefined || m.matchSource === source);
}
