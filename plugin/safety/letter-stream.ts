// Turns text into the stream of letters a reader sees, for marker matching:
// every character folded (char-fold.ts), HTML character references decoded,
// gaps (spaces, punctuation, line breaks) and ignorables dropped. Each stream
// entry remembers the range of the original text it came from. A long gap
// becomes a break (code 0) that no match may span.
//
// With `skipMarkup`, an HTML-like tag directly after a letter ("EXT<b>ERNAL")
// is dropped as if absent. That is a separate pass because a tag can also
// carry a marker itself ("</external untrusted content>").

import { ASCII_FOLD, GAP, foldCodePoint } from './char-fold.ts';
import { entityAt } from './html-entity.ts';

export const BREAK = 0;
/** More gap characters than this between two letters break the stream. */
export const MAX_GAP = 24;

/** An HTML-like tag or comment. */
export const TAG_SOURCE = '<(?:!--[^]{0,64}?--|\\/?[A-Za-z][A-Za-z0-9-]{0,31}(?:[\\s/][^<>]{0,256})?)>';
const TAG_RE = new RegExp(TAG_SOURCE, 'y');

/** Fold of each ASCII code as a stream code, -1 for a gap, -2 for ignorable. */
const ASCII_CODE = Int16Array.from(ASCII_FOLD, (f) => (f === GAP ? -1 : f === '' ? -2 : f.charCodeAt(0)));

// The stream being built, in module state so the helpers below need no
// arguments for it; reused between calls.
let codes = new Uint8Array(1024);
let from = new Int32Array(1024);
let to = new Int32Array(1024);
let length = 0;
/** Gap characters since the last letter. */
let gap = 0;

/** The stream of the last buildStream(). */
export const stream = { length: 0, codes, from, to };

function ensureRoom(n: number): void {
  if (n <= codes.length) return;
  let size = codes.length;
  while (size < n) size *= 2;
  const biggerCodes = new Uint8Array(size);
  const biggerFrom = new Int32Array(size);
  const biggerTo = new Int32Array(size);
  biggerCodes.set(codes);
  biggerFrom.set(from);
  biggerTo.set(to);
  codes = biggerCodes;
  from = biggerFrom;
  to = biggerTo;
}

function push(code: number, start: number, end: number): void {
  ensureRoom(length + 2);
  if (gap > MAX_GAP && length > 0 && codes[length - 1] !== BREAK) {
    codes[length] = BREAK;
    from[length] = start;
    to[length] = start;
    length++;
  }
  codes[length] = code;
  from[length] = start;
  to[length] = end;
  length++;
  gap = 0;
}

/** An ignorable keeps a word together ("E\u200bXTERNAL"): it joins the letter before it. */
function joinIgnorable(i: number, end: number): void {
  if (length > 0 && gap === 0 && to[length - 1] === i) to[length - 1] = end;
}

function pushFold(f: string, start: number, end: number): void {
  if (f === GAP) gap++;
  else for (let j = 0; j < f.length; j++) push(f.charCodeAt(j), start, end);
}

/**
 * Reads ASCII from `i` up to the next "&", "<" or non-ASCII character (at
 * least one character) and returns where it stopped. The hot loop: locals only.
 */
function plainAsciiRun(s: string, i: number): number {
  const n = s.length;
  // At most one entry per character, plus a break per MAX_GAP + 1 of them.
  ensureRoom(length + (n - i) + ((n - i) >> 4) + 2);
  const c0 = codes;
  const f0 = from;
  const t0 = to;
  let len = length;
  let g = gap;
  let p = i;
  do {
    const code = ASCII_CODE[s.charCodeAt(p)]!;
    if (code >= 0) {
      if (g > MAX_GAP && len > 0 && c0[len - 1] !== BREAK) {
        c0[len] = BREAK;
        f0[len] = p;
        t0[len] = p;
        len++;
      }
      c0[len] = code;
      f0[len] = p;
      t0[len] = p + 1;
      len++;
      g = 0;
    } else if (code === -1) {
      g++;
    } else if (len > 0 && g === 0 && t0[len - 1] === p) {
      t0[len - 1] = p + 1; // an ignorable control character joins the letter before it
    }
    p++;
    if (p >= n) break;
    const c = s.charCodeAt(p);
    if (c >= 128 || c === 38 || c === 60) break;
  } while (true);
  length = len;
  gap = g;
  return p;
}

/** Builds the letter stream of `s` into `stream`. */
export function buildStream(s: string, skipMarkup: boolean): void {
  const n = s.length;
  length = 0;
  gap = 0;
  for (let i = 0; i < n;) {
    const c = s.charCodeAt(i);
    if (c < 128) {
      if (c === 38) {
        // "&": a character reference reads as the character it stands for.
        const entity = entityAt(s, i);
        if (entity !== null) {
          for (const ch of entity.text) pushFold(foldCodePoint(ch.codePointAt(0)!), i, entity.end);
          i = entity.end;
          continue;
        }
      } else if (c === 60 && skipMarkup && gap === 0 && length > 0 && to[length - 1] === i) {
        TAG_RE.lastIndex = i;
        if (TAG_RE.test(s)) {
          const end = TAG_RE.lastIndex;
          // Keep the tag inside the word: the next letter continues it.
          to[length - 1] = end;
          i = end;
          continue;
        }
      }
      i = plainAsciiRun(s, i);
      continue;
    }
    let cp = c;
    let len = 1;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        cp = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
        len = 2;
      }
    }
    const f = foldCodePoint(cp);
    if (f === '') joinIgnorable(i, i + len);
    else pushFold(f, i, i + len);
    i += len;
  }
  stream.length = length;
  stream.codes = codes;
  stream.from = from;
  stream.to = to;
}
