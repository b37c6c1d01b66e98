// Splitting a message at a platform's size limit: at a paragraph break, else a line break, else the
// end of a sentence, else a space, and only as a last resort inside a word. A cut never falls inside
// a character (a surrogate pair) and, where the cluster fits, never inside a grapheme cluster (an
// emoji with its modifiers, a flag, a letter with its combining marks): those read as one character.
// Whitespace at a cut is dropped, so no part starts or ends with the break it was cut at.

import type { SizeLimit } from './types.ts';

const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });

/** A boundary of each kind, best first: the cut goes after the match. */
const BOUNDARIES = [/\n[ \t]*\n\s*/g, /\n\s*/g, /[.!?…。！？]+["'”’)\]]*\s+/g, /\s+/g];

/** The parts of `text` under the limit, in order. A text within the limit is one part, untouched. */
export function splitMessage(text: string, limit: SizeLimit): string[] {
  return splitRanges(text, limit).map(([start, end]) => text.slice(start, end));
}

/** The [start, end) ranges of the parts; what lies between two ranges is whitespace. */
export function splitRanges(text: string, limit: SizeLimit): [number, number][] {
  const weight = limit.weight ?? (() => 1);
  if (prefixEnd(text, 0, limit.max, weight) === text.length) return [[0, text.length]];
  const ranges: [number, number][] = [];
  let start = 0;
  for (;;) {
    let fits = prefixEnd(text, start, limit.max, weight);
    // A single code point heavier than the whole limit still goes, alone, rather than never.
    if (fits === start) fits = start + (text.codePointAt(start)! > 0xffff ? 2 : 1);
    if (fits === text.length) {
      const end = trimmedEnd(text, start, text.length);
      if (end > start) ranges.push([start, end]);
      return ranges;
    }
    const cut = cutPoint(text, start, fits);
    const end = trimmedEnd(text, start, cut);
    if (end > start) ranges.push([start, end]);
    start = cut;
    while (start < text.length && /\s/.test(text[start]!)) start++;
    if (start >= text.length) return ranges;
  }
}

/** The end of the longest prefix of text[start..] whose weight is within max (at a code point boundary). */
function prefixEnd(text: string, start: number, max: number, weight: (cp: number) => number): number {
  let used = 0;
  let i = start;
  while (i < text.length) {
    const cp = text.codePointAt(i)!;
    used += weight(cp);
    if (used > max) return i;
    i += cp > 0xffff ? 2 : 1;
  }
  return i;
}

/** Where to cut text[start..fits): the best boundary in the window, else a grapheme boundary. */
function cutPoint(text: string, start: number, fits: number): number {
  const window = text.slice(start, fits);
  const half = window.length / 2;
  let latest = -1;
  for (const pattern of BOUNDARIES) {
    const at = lastMatchEnd(pattern, window);
    // A boundary in the window's first half would leave a small part; a lesser kind further on is better.
    if (at > half) return start + at;
    if (at > 0 && latest < 0) latest = at;
  }
  if (latest > 0) return start + latest;
  return graphemeCut(text, start, fits);
}

function lastMatchEnd(pattern: RegExp, window: string): number {
  let end = -1;
  pattern.lastIndex = 0;
  for (let m = pattern.exec(window); m; m = pattern.exec(window)) {
    // A match reaching the window's end may go on past it: its whitespace is dropped at the cut anyway.
    if (m.index > 0) end = m.index + m[0].length;
    if (m[0].length === 0) pattern.lastIndex++;
  }
  return end;
}

/** The start of the grapheme cluster holding `fits`, unless that cluster began at `start` (too long for a part). */
function graphemeCut(text: string, start: number, fits: number): number {
  // A cluster is short: a window around the cut is enough to find its start.
  const from = Math.max(start, fits - 256);
  const cluster = graphemes.segment(text.slice(from, fits + 256)).containing(fits - from);
  const clusterStart = cluster ? from + cluster.index : fits;
  return clusterStart > start ? clusterStart : fits;
}

function trimmedEnd(text: string, start: number, end: number): number {
  while (end > start && /\s/.test(text[end - 1]!)) end--;
  return end;
}

/** A code point's size in UTF-8 once escaped in a JSON string (Teams counts the card's bytes). */
export function jsonUtf8Weight(cp: number): number {
  if (cp === 0x22 || cp === 0x5c || cp === 0x08 || cp === 0x0c || cp === 0x0a || cp === 0x0d || cp === 0x09) return 2;
  if (cp < 0x20) return 6;
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}
