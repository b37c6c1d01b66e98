// Folds one character to what a reader would take it for, for marker matching.
//
// A fold is a string:
//   ''          ignorable: invisible, format, control or combining character
//   ' '         a gap: space, punctuation, symbol, line break
//   otherwise   stream characters: a-z and 0-9 for what the character reads as,
//               '*' for a Latin-script letter with no ASCII reading (small
//               capitals, IPA: any letter may be meant), '#' for a letter of
//               another script (a plain mismatch).
//
// Non-ASCII characters go through NFKD, lose combining marks and are mapped
// with the Unicode confusables data to their prototypes, then lower-cased,
// repeated until nothing changes. ASCII is only lower-cased: the confusables
// data also maps ASCII to ASCII ("m" to "rn"), which would make ordinary
// English harder to pre-screen cheaply and buys nothing the fuzzy match
// does not already tolerate.

import { CONFUSABLES } from './confusables.ts';

export const GAP = ' ';

/** ASCII folds, indexed by char code. */
export const ASCII_FOLD: readonly string[] = Array.from({ length: 128 }, (_, c) => {
  const ch = String.fromCharCode(c);
  if (/[A-Za-z0-9]/.test(ch)) return ch.toLowerCase();
  if (c === 9 || c === 10 || c === 11 || c === 12 || c === 13) return GAP;
  if (c < 32 || c === 127) return '';
  return GAP;
});

const IGNORABLE_RE = /^[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Cc}\p{M}\u180e\u2800\u3164\uffa0\u115f\u1160]$/u;
const MARK_RE = /\p{M}/u;
const LETTER_OR_NUMBER_RE = /^[\p{L}\p{N}]$/u;
const LATIN_RE = /^\p{Script=Latin}$/u;

const MAX_ROUNDS = 4;

/** NFKD without marks, non-ASCII mapped to confusable prototypes, lower-cased, to a fixed point. */
function skeleton(ch: string): string {
  let t = ch;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let next = '';
    for (const c of t.normalize('NFKD')) {
      const cp = c.codePointAt(0)!;
      const prototype = cp < 128 ? c : CONFUSABLES.get(cp);
      if (prototype !== undefined) next += prototype.toLowerCase();
      else if (!MARK_RE.test(c)) next += c.toLowerCase();
    }
    if (next === t) break;
    t = next;
  }
  return t;
}

/** Regional indicator symbols (the letters of flag emoji) read as the letters they show. */
const REGIONAL_A = 0x1f1e6;
const REGIONAL_Z = 0x1f1ff;

function foldUncached(ch: string): string {
  const code = ch.codePointAt(0)!;
  if (code >= REGIONAL_A && code <= REGIONAL_Z) return String.fromCharCode(97 + code - REGIONAL_A);
  // A mark the confusables data takes for a letter (Telugu "ం" for "o") is that letter.
  if (IGNORABLE_RE.test(ch) && !CONFUSABLES.has(ch.codePointAt(0)!)) return '';
  // A symbol may read as an ASCII letter ("×" as x), but a dash whose
  // prototype is a letter of another script ("—" to "ー") stays a gap.
  const isLetter = LETTER_OR_NUMBER_RE.test(ch);
  let out = '';
  let gap = false;
  for (const c of skeleton(ch)) {
    const cp = c.codePointAt(0)!;
    if (cp < 128) {
      const f = ASCII_FOLD[cp]!;
      if (f === GAP) gap = true;
      else out += f;
    } else if (LETTER_OR_NUMBER_RE.test(c)) {
      if (isLetter) out += LATIN_RE.test(c) ? '*' : '#';
      else gap = true;
    } else if (!IGNORABLE_RE.test(c)) {
      gap = true;
    }
  }
  return out !== '' ? out : gap ? GAP : '';
}

// Memo: every code point in a flat table (2.2 MB, made on first use) of ids
// into the distinct folds, which are few, so no input, however varied, makes
// a character be folded twice.
let foldIdOf: Uint16Array | null = null; // 0: not folded yet
const folds: string[] = [''];
const foldIds = new Map<string, number>();

function idOf(f: string): number {
  let id = foldIds.get(f);
  if (id === undefined) {
    id = folds.length;
    folds.push(f);
    foldIds.set(f, id);
  }
  return id;
}

/** The fold of a code point (see the top of this file). */
export function foldCodePoint(cp: number): string {
  if (cp < 128) return ASCII_FOLD[cp]!;
  foldIdOf ??= new Uint16Array(0x110000);
  let id = foldIdOf[cp]!;
  if (id === 0) foldIdOf[cp] = id = idOf(foldUncached(String.fromCodePoint(cp)));
  return folds[id]!;
}
