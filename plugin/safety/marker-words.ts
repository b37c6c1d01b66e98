// Replaces every stretch of text that reads as a start or end marker with a
// visible, harmless token. The words are found on the letter stream
// (fuzzy-marker-words.ts); the replaced range then takes in what belongs to a
// marker around them in the original text: a preceding "end" or "/", opening
// brackets, attributes such as id="…" and closing brackets. Text outside that
// range is never touched.

import { angleOf } from './angle-brackets.ts';
import { GAP, foldCodePoint } from './char-fold.ts';
import { entityAt } from './html-entity.ts';
import { endWordBefore, findMarkerWords } from './fuzzy-marker-words.ts';
import { LetterStream } from './letter-stream.ts';

export const START_TOKEN = '[[MARKER_SANITIZED]]';
export const END_TOKEN = '[[END_MARKER_SANITIZED]]';

/** How far to look back for opening brackets or "/". */
const MAX_PREFIX = 48;
/** How far to look ahead for closing brackets. */
const MAX_SUFFIX = 64;
const MAX_ATTRIBUTES = 8;

// process-wide scratch: the letter stream of the text being read, built and read within one
// neutraliseMarkerWords call (its arrays are reused, not reallocated per call).
const scratch = new LetterStream();

const QUOTES = `"'\`\\p{Pi}\\p{Pf}＂＇`;
/** Spaces and invisible characters on the same line. */
const FILL = '(?:[^\\S\\r\\n]|[\\p{Cf}\\p{Default_Ignorable_Code_Point}]){0,8}';
const ATTRIBUTE_RE = new RegExp(
  `${FILL}[\\p{L}\\p{N}\\p{Cf}\\p{Default_Ignorable_Code_Point}_-]{1,32}${FILL}[=＝]${FILL}` +
    `(?:[${QUOTES}][^${QUOTES}\\r\\n]{0,256}[${QUOTES}]|[^\\s<>=${QUOTES}]{1,256})`,
  'uy',
);

function isLineBreak(cp: number): boolean {
  return cp === 10 || cp === 13 || cp === 11 || cp === 12 || cp === 0x85 || cp === 0x2028 || cp === 0x2029;
}

/** A space, punctuation or invisible character on the same line. */
function isInlineFiller(cp: number): boolean {
  if (isLineBreak(cp)) return false;
  const f = foldCodePoint(cp);
  return f === GAP || f === '';
}

function codePointBefore(s: string, i: number): number {
  const c = s.charCodeAt(i - 1);
  if (c >= 0xdc00 && c <= 0xdfff && i >= 2) {
    const h = s.charCodeAt(i - 2);
    if (h >= 0xd800 && h <= 0xdbff) return ((h - 0xd800) << 10) + (c - 0xdc00) + 0x10000;
  }
  return c;
}

/** Longest character reference taken as a bracket ("&LeftAngleBracket;"). */
const MAX_REFERENCE = 20;

/** Length of a character reference for an angle bracket ending at `p` ("&lt;"), or 0. */
function bracketReferenceBefore(s: string, p: number): number {
  if (s.charCodeAt(p - 1) !== 59) return 0; // ";"
  const amp = s.lastIndexOf('&', p - 1);
  if (amp < 0 || p - amp > MAX_REFERENCE) return 0;
  const entity = entityAt(s, amp);
  return entity !== null && entity.end === p && angleOf(entity.text.codePointAt(0)!) !== 0 ? p - amp : 0;
}

/** End of a character reference for an angle bracket starting at `p`, or 0. */
function bracketReferenceAt(s: string, p: number): number {
  if (s.charCodeAt(p) !== 38) return 0; // "&"
  const entity = entityAt(s, p);
  return entity !== null && angleOf(entity.text.codePointAt(0)!) !== 0 ? entity.end : 0;
}

const LINE_BREAK_RE = /[\n\r\v\f\u0085\u2028\u2029]/;

/** Is there an opening bracket or "/" just before `i` (spaces between allowed)? */
function opensWithBracket(s: string, i: number): boolean {
  for (let p = i; p > 0 && i - p < MAX_PREFIX;) {
    if (bracketReferenceBefore(s, p) > 0) return true;
    const cp = codePointBefore(s, p);
    if (cp === 47 || cp === 0xff0f || angleOf(cp) !== 0) return true;
    if (!isInlineFiller(cp)) return false;
    p -= cp > 0xffff ? 2 : 1;
  }
  return false;
}

/**
 * Moves `i` back over opening brackets and "/" (with fillers between), never below `floor`; says
 * whether a "/" was among them (the marker then closes: "</external…>").
 */
function extendBack(s: string, i: number, floor: number): { start: number; closingSlash: boolean } {
  let start = i;
  let closingSlash = false;
  for (let p = i; p > floor && i - p < MAX_PREFIX;) {
    const reference = bracketReferenceBefore(s, p);
    if (reference > 0 && p - reference >= floor) {
      p -= reference;
      start = p;
      continue;
    }
    const cp = codePointBefore(s, p);
    const len = cp > 0xffff ? 2 : 1;
    if (cp === 47 || cp === 0xff0f) {
      start = p - len;
      closingSlash = true;
    } else if (angleOf(cp) !== 0) {
      start = p - len;
    } else if (!isInlineFiller(cp)) {
      break;
    }
    p -= len;
  }
  return { start, closingSlash };
}

/** Moves `i` forward over attributes, "/" and closing brackets. */
function extendForward(s: string, i: number): number {
  let end = i;
  for (let n = 0; n < MAX_ATTRIBUTES; n++) {
    ATTRIBUTE_RE.lastIndex = end;
    if (!ATTRIBUTE_RE.test(s)) break;
    end = ATTRIBUTE_RE.lastIndex;
  }
  for (let p = end; p < s.length && p - end < MAX_SUFFIX;) {
    const referenceEnd = bracketReferenceAt(s, p);
    if (referenceEnd > 0) {
      p = end = referenceEnd;
      continue;
    }
    const cp = s.codePointAt(p)!;
    const len = cp > 0xffff ? 2 : 1;
    if (cp === 47 || cp === 0xff0f || angleOf(cp) !== 0) end = p + len;
    else if (!isInlineFiller(cp)) break;
    p += len;
  }
  return end;
}

/**
 * Replaces every marker found in `s` with a token. `skipMarkup` reads through
 * tags inside a word (see letter-stream.ts). Returns `s` itself when there is none.
 */
export function neutraliseMarkerWords(s: string, skipMarkup: boolean): string {
  const stream = scratch.build(s, skipMarkup);
  let out = '';
  let last = 0;
  findMarkerWords(stream, (start, end) => {
    let endWord = endWordBefore(stream, start);
    // "the end.\nEXTERNAL…" ends a sentence; "<<<END\nEXTERNAL…" is one marker.
    if (endWord >= 0 && LINE_BREAK_RE.test(s.slice(stream.to[start - 1]!, stream.from[start]!))) {
      if (!opensWithBracket(s, stream.from[endWord]!)) endWord = -1;
    }
    let from = stream.from[endWord >= 0 ? endWord : start]!;
    let to = stream.to[end]!;
    if (from < last) from = last;
    const back = extendBack(s, from, last);
    from = back.start;
    to = extendForward(s, to);
    out += s.slice(last, from) + (endWord >= 0 || back.closingSlash ? END_TOKEN : START_TOKEN);
    last = to;
  });
  return last === 0 && out === '' ? s : out + s.slice(last);
}
