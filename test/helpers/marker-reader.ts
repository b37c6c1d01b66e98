// An independent reader for the marker tests: how a careless reader (or a
// model) might read untrusted text. Built straight from the data packages
// and the Unicode properties, without the module's code, and deliberately
// simple: it is slow and does not map offsets.

import { createRequire } from 'node:module';
import { decodeHTML } from 'entities';

const require = createRequire(import.meta.url);
const CONFUSABLES = require('unhomoglyph/data.json') as Record<string, string>;

const DIGITS: Record<string, string> = { '0': 'o', '1': 'l', '3': 'e', '4': 'a', '5': 's', '7': 't' };
const INVISIBLE_RE = /[\p{Default_Ignorable_Code_Point}\p{Cf}\p{M}\u0000-\u0008\u000e-\u001f\u007f-\u009f]/u;
const HTML_TAG_RE = /<\/?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?>|<!--[^]*?-->/g;
const MAX_GAP = 24;

function fold(ch: string): string {
  // A regional indicator symbol shows its letter (pairs of them show flags).
  const cp = ch.codePointAt(0)!;
  if (cp >= 0x1f1e6 && cp <= 0x1f1ff) return String.fromCharCode(97 + cp - 0x1f1e6);
  let t = ch;
  for (let round = 0; round < 4; round++) {
    const next = Array.from(t.normalize('NFKD'))
      .filter((c) => !/\p{M}/u.test(c))
      .map((c) => (c.charCodeAt(0) < 128 ? c : (CONFUSABLES[c] ?? c)).toLowerCase())
      .join('');
    if (next === t) break;
    t = next;
  }
  return t;
}

/** The letters of `text` as read: a-z, '?' for other letters, '|' for a long gap. */
function readLetters(text: string): string {
  let out = '';
  let gap = 0;
  for (const ch of text) {
    if (INVISIBLE_RE.test(ch)) continue;
    for (const c of fold(ch)) {
      const letter = /[a-z]/.test(c) ? c : (DIGITS[c] ?? (/[\p{L}\p{N}]/u.test(c) ? '?' : ''));
      if (letter === '') {
        gap++;
        continue;
      }
      if (gap > MAX_GAP) out += '|';
      gap = 0;
      out += letter;
    }
  }
  return out;
}

const MIRROR: Record<string, string> = { '<': '>', '>': '<', '«': '»', '»': '«', '‹': '›', '›': '‹' };

/** `text` as displayed: what follows a right-to-left override, embedding or isolate, up to its end, reversed. */
export function displayOrder(text: string): string {
  return text
    .replace(/[\u202b\u202e\u2067]([^\u202c\u2069\n\r\u2029]*)/g, (_m, span: string) =>
      Array.from(span)
        .reverse()
        .map((c) => MIRROR[c] ?? c)
        .join(''),
    )
    .replace(/[\u202a-\u202e\u2066-\u2069]/g, '');
}

/** Do the marker words, exactly, appear in `text` as read or as displayed (with and without reading through tags)? */
export function readsAsMarkerWords(text: string): boolean {
  return [text, displayOrder(text)].some((shown) => {
    const decoded = decodeHTML(shown);
    return [decoded, decoded.replace(HTML_TAG_RE, '')].some((t) => readLetters(t).includes('externaluntrustedcontent'));
  });
}

const OPEN = new Set(['<', '«', '‹', '≪', '⋘']);
const CLOSE = new Set(['>', '»', '›', '≫', '⋙']);
for (const [from, to] of Object.entries(CONFUSABLES)) {
  if (/^<+$/.test(to)) OPEN.add(from);
  if (/^>+$/.test(to)) CLOSE.add(from);
}

function weight(ch: string, side: Set<string>): number {
  const folded = ch.normalize('NFKD');
  if (!side.has(ch) && !side.has(folded)) return 0;
  const to = CONFUSABLES[ch] ?? folded;
  return /^[<>]+$/.test(to) ? to.length : ch === '≪' || ch === '≫' ? 2 : 1;
}

/**
 * Is there a look-alike of "<<<" or ">>>" next to a word: three or more
 * brackets one way (spaces and invisibles allowed between, references decoded)
 * that are not plain ASCII, or a plain "<<<WORD…>>>" on one line?
 */
export function hasDelimiterLookAlike(text: string): boolean {
  if (/<<<\/?[\p{L}\p{N}_](?:[^\n\r\u2028\u2029]*\S)?>>>/u.test(text)) return true;
  const chars = Array.from(decodeHTML(text));
  for (const side of [OPEN, CLOSE]) {
    for (let i = 0; i < chars.length; i++) {
      if (weight(chars[i]!, side) === 0) continue;
      let total = 0;
      let plain = true;
      let fillers = 0;
      let end = i; // just past the last bracket
      for (let j = i; j < chars.length && fillers <= 4; j++) {
        const w = weight(chars[j]!, side);
        if (w > 0) {
          if (fillers > 0 && chars[j] !== chars[end - 1]) break; // spaces only join equal brackets
          total += w;
          if (fillers > 0 || (chars[j] !== '<' && chars[j] !== '>')) plain = false;
          fillers = 0;
          end = j + 1;
        } else if (/[\s\p{Cf}\p{Default_Ignorable_Code_Point}]/u.test(chars[j]!)) {
          fillers++;
        } else {
          break;
        }
      }
      let a = end;
      while (a < chars.length && a - end < 4 && /[\s\p{Cf}\p{Default_Ignorable_Code_Point}/]/u.test(chars[a]!)) a++;
      let b = i;
      while (b > 0 && i - b < 4 && /[\s\p{Cf}\p{Default_Ignorable_Code_Point}]/u.test(chars[b - 1]!)) b--;
      const touches =
        side === OPEN
          ? /[\p{L}\p{N}_]/u.test(chars[a] ?? '')
          : /[\p{L}\p{N}_"'\p{Pi}\p{Pf}/]/u.test(chars[b - 1] ?? '');
      if (total >= 3 && !plain && touches) return true;
      i = end - 1;
    }
  }
  return false;
}
