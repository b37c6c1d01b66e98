// Finds the marker words in the letter stream (letter-stream.ts) by edit
// distance: "externaluntrustedcontent" with up to MAX_EDITS letters changed,
// added or dropped. No list of look-alikes can be complete, so after folding
// a few letters may be anything at all.
//
// The search is Myers' bit-parallel approximate matching (one pass, a few
// integer operations per letter, no backtracking); the start of a hit is then
// recovered with a small dynamic programme over at most M + MAX_EDITS letters.

import { BREAK as BREAK_IMPORT, MAX_GAP, stream } from './letter-stream.ts';

/** A local copy: an imported binding can cost a lookup per read in a hot loop. */
const BREAK = BREAK_IMPORT;

const WORDS = 'externaluntrustedcontent';
const M = WORDS.length;
const ALL = (1 << M) - 1;
const HIGH = 1 << (M - 1);

/** Letters that may differ in a hit; the rest must read exactly right. */
export const MAX_EDITS = 3;
/** A hit must contain this many letters that are not wildcards ('*'). */
const MIN_PLAIN = 6;

// Digits written for letters ("3XT3RN4L"): digits are a closed set, so this
// short table is complete for the letters of the marker words.
const DIGIT_READS: Record<string, string> = { '0': 'o', '1': 'l', '3': 'e', '4': 'a', '5': 's', '7': 't' };

/** For each stream code, the bit set of pattern positions it can stand for. */
function readingMasks(pattern: string): Int32Array {
  const masks = new Int32Array(128);
  for (let i = 0; i < pattern.length; i++) {
    const letter = pattern[i]!;
    masks[letter.charCodeAt(0)]! |= 1 << i;
    for (const [digit, reads] of Object.entries(DIGIT_READS)) if (reads === letter) masks[digit.charCodeAt(0)]! |= 1 << i;
  }
  masks[42] = (1 << pattern.length) - 1; // '*': a Latin letter of unknown reading
  return masks;
}

const PEQ = readingMasks(WORDS);

/** Most characters between "end" and the words. */
const MAX_END_GAP = 16;
const END_PEQ = readingMasks('end');

/** Edit distance between WORDS and the stream ending at `end`, for each start: returns the best start. */
const column = new Int32Array(M + 1);
function matchStart(end: number): number {
  const codes = stream.codes;
  let lo = Math.max(0, end - (M + MAX_EDITS) + 1);
  for (let j = end; j >= lo; j--) if (codes[j] === BREAK) lo = j + 1;
  for (let i = 0; i <= M; i++) column[i] = i;
  let best = M;
  let bestLen = 0;
  for (let len = 1; len <= end - lo + 1; len++) {
    const eq = PEQ[codes[end - len + 1]!]!;
    let diag = column[0]!;
    column[0] = len;
    for (let i = 1; i <= M; i++) {
      const cost = eq & (1 << (M - i)) ? 0 : 1;
      const v = Math.min(diag + cost, column[i]! + 1, column[i - 1]! + 1);
      diag = column[i]!;
      column[i] = v;
    }
    if (column[M]! <= best) {
      best = column[M]!;
      bestLen = len;
    }
  }
  return end - bestLen + 1;
}

function plainCount(codes: Uint8Array, start: number, end: number): number {
  let n = 0;
  for (let j = start; j <= end; j++) if (codes[j] !== 42) n++;
  return n;
}

/**
 * Calls `onHit(start, end)` (inclusive stream indices) for each stretch of the
 * stream that reads as the marker words, left to right, without overlaps.
 */
export function findMarkerWords(onHit: (start: number, end: number) => void): void {
  const { codes, length } = stream;
  let pv = ALL;
  let mv = 0;
  let score = M;
  let bestEnd = -1;
  let bestScore = 0;
  const report = (): void => {
    const start = matchStart(bestEnd);
    if (plainCount(codes, start, bestEnd) >= MIN_PLAIN) onHit(start, bestEnd);
  };
  for (let j = 0; j < length; j++) {
    const code = codes[j]!;
    if (code === BREAK || (bestEnd >= 0 && j - bestEnd > MAX_EDITS)) {
      if (bestEnd >= 0) {
        report();
        j = bestEnd; // carry on just after the hit with a fresh state
        bestEnd = -1;
      }
      pv = ALL;
      mv = 0;
      score = M;
      continue;
    }
    const eq = PEQ[code]!;
    const xv = eq | mv;
    const xh = (((eq & pv) + pv) ^ pv) | eq;
    let ph = mv | ~(xh | pv);
    let mh = pv & xh;
    if (ph & HIGH) score++;
    else if (mh & HIGH) score--;
    ph <<= 1;
    mh <<= 1;
    pv = (mh | ~(xv | ph)) & ALL;
    mv = ph & xv & ALL;
    if (bestEnd >= 0) {
      if (score < bestScore) {
        bestScore = score;
        bestEnd = j;
      }
    } else if (score <= MAX_EDITS) {
      bestEnd = j;
      bestScore = score;
    }
  }
  if (bestEnd >= 0) report();
}

/**
 * If the word "end" (one letter may differ) stands just before stream index
 * `start`, as a word of its own, returns the index of its first letter; else -1.
 */
export function endWordBefore(start: number): number {
  const p = start - 3;
  if (p < 0) return -1;
  const { codes, from, to } = stream;
  let misses = 0;
  for (let i = 0; i < 3; i++) {
    const code = codes[p + i]!;
    if (code === BREAK) return -1;
    if (!(END_PEQ[code]! & (1 << i))) misses++;
  }
  if (misses > 1 || from[start]! - to[start - 1]! > MAX_END_GAP) return -1;
  const wordStart = p === 0 || codes[p - 1] === BREAK || to[p - 1]! < from[p]!;
  return wordStart ? p : -1;
}

/**
 * A cheap, native pre-check for printable ASCII, whose stream is
 * its letters and digits: a hit with at most MAX_EDITS edits leaves at least
 * one of MAX_EDITS + 1 consecutive pieces of the words intact, with only gap
 * characters between its letters.
 */
export const MARKER_PIECES_RE = ((): RegExp => {
  const pieces: string[] = [];
  const size = Math.ceil(M / (MAX_EDITS + 1));
  for (let at = 0; at < M; at += size) {
    const letters: string[] = [];
    for (let i = at; i < Math.min(M, at + size); i++) {
      let cls = '';
      for (const ch of 'abcdefghijklmnopqrstuvwxyz0123456789') if (PEQ[ch.charCodeAt(0)]! & (1 << i)) cls += ch;
      letters.push(`[${cls}]`);
    }
    pieces.push(letters.join(`[^a-z0-9]{0,${MAX_GAP}}`));
  }
  return new RegExp(pieces.join('|'), 'i');
})();
