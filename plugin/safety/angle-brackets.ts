// Which characters read as angle brackets, and how many: "<" is 1, "≪" is 2,
// "⋘" is 3; opening ones are positive, closing ones negative.
//
// Decided by data, not by a hand list: a character whose NFKD form mapped
// through the Unicode confusables data is only "<" (or only ">"), e.g. "‹",
// "＜", "˂", "ᐸ", "≪"; or a mirrored initial/final quotation mark ("«", "»",
// by the Unicode properties Bidi_Mirrored and Pi/Pf).

import { CONFUSABLES } from './confusables.ts';

const MIRRORED_RE = /^\p{Bidi_Mirrored}$/u;
const INITIAL_QUOTE_RE = /^\p{Pi}$/u;
const FINAL_QUOTE_RE = /^\p{Pf}$/u;

function skeleton(ch: string): string {
  let out = '';
  for (const c of ch.normalize('NFKD')) out += CONFUSABLES.get(c.codePointAt(0)!) ?? c;
  return out;
}

function angleUncached(ch: string): number {
  const sk = skeleton(ch);
  if (/^<+$/.test(sk)) return sk.length;
  if (/^>+$/.test(sk)) return -sk.length;
  if (!MIRRORED_RE.test(ch)) return 0;
  return INITIAL_QUOTE_RE.test(ch) ? 1 : FINAL_QUOTE_RE.test(ch) ? -1 : 0;
}

// Memo: every code point in a flat table (1.1 MB, made on first use), so no
// input, however varied, makes a character be looked at twice.
const UNKNOWN = -128;
let weightOf: Int8Array | null = null;

/** Signed angle-bracket weight of a code point (0: not an angle bracket). */
export function angleOf(cp: number): number {
  if (cp < 128) return cp === 60 ? 1 : cp === 62 ? -1 : 0;
  weightOf ??= new Int8Array(0x110000).fill(UNKNOWN);
  let w = weightOf[cp]!;
  if (w === UNKNOWN) weightOf[cp] = w = angleUncached(String.fromCodePoint(cp));
  return w;
}
