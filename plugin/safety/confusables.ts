// The Unicode confusables mapping (UTS #39, confusables.txt) as shipped by
// the unhomoglyph package: each source character maps to its prototype, e.g.
// Lisu "ꓰ" and Cherokee "Ꭼ" to "E", "×" to "x", "‹" to "<".

import data from 'unhomoglyph/data.json' with { type: 'json' };

export const CONFUSABLES: ReadonlyMap<number, string> = new Map(
  Object.entries(data).map(([from, to]) => [from.codePointAt(0)!, to]),
);
