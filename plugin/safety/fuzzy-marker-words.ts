// Finds the marker words in the letter stream (letter-stream.ts) by edit
// distance: "externaluntrustedcontent" with up to MAX_EDITS letters changed,
// added or dropped, at most MAX_PLAIN_EDITS of them plain typos. No list of
// look-alikes can be complete, so after folding a few letters may be anything.
//
// The search is Myers' bit-parallel approximate matching (one pass, a few
// integer operations per letter, no backtracking). Each end within reach is
// then weighed with a small dynamic programme over at most M + MAX_EDITS
// letters, which also finds where the hit starts.

import { CONFUSABLES } from './confusables.ts';
import { BREAK as BREAK_IMPORT, MAX_GAP, type LetterStream } from './letter-stream.ts';

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
    for (const [digit, reads] of Object.entries(DIGIT_READS))
      if (reads === letter) masks[digit.charCodeAt(0)]! |= 1 << i;
  }
  masks[42] = (1 << pattern.length) - 1; // '*': a Latin letter of unknown reading
  return masks;
}

const PEQ = readingMasks(WORDS);

/** Most characters between "end" and the words. */
const MAX_END_GAP = 16;
const END_PEQ = readingMasks('end');

// Recovering the start of a hit, the alignment is scored as
// edits * EDIT + plainEdits: fewest edits first, then fewest "plain" edits,
// those that no unusual character explains (a missing letter, or an ASCII
// letter where another belongs). Ordinary prose near the words, such as
// "external trusted content", differs only by plain edits; a forgery needs
// look-alikes, digits or invisibles, which are not plain.
const EDIT = 32; // > any count of plain edits
/** A hit may have at most this many plain edits. */
const MAX_PLAIN_EDITS = 1;

function isPlainLetter(code: number): boolean {
  return code >= 97 && code <= 122;
}

/**
 * ASCII letters the confusables data takes for another ASCII letter ("I" for
 * "l"): a substitution by one is not plain. ASCII is only lower-cased in the
 * stream, so this is by lower case.
 */
const LOOK_ALIKE = ((): Int32Array => {
  const masks = new Int32Array(128);
  for (let c = 65; c < 123; c++) {
    const to = CONFUSABLES.get(c)?.toLowerCase();
    if (to === undefined || to.length !== 1) continue;
    const from = String.fromCharCode(c).toLowerCase().charCodeAt(0);
    for (let i = 0; i < M; i++) if (WORDS[i] === to) masks[from]! |= 1 << i;
  }
  return masks;
})();

// process-wide scratch: one column of matchStart's programme, filled and read within one call.
const column = new Int32Array(M + 1);

/** The start of the best alignment of WORDS with the stream ending at `end`, and its score. */
function matchStart(codes: Uint8Array, end: number): { start: number; score: number } {
  let lo = Math.max(0, end - (M + MAX_EDITS) + 1);
  for (let j = end; j >= lo; j--) if (codes[j] === BREAK) lo = j + 1;
  for (let i = 0; i <= M; i++) column[i] = i * (EDIT + 1); // letters missing at the end
  let best = column[M]!;
  let bestLen = 0;
  for (let len = 1; len <= end - lo + 1; len++) {
    const code = codes[end - len + 1]!;
    const eq = PEQ[code]!;
    const extra = EDIT + (isPlainLetter(code) ? 1 : 0); // cost of this character as a substitute or an extra
    let diag = column[0]!;
    column[0] = diag + extra;
    const lookAlike = LOOK_ALIKE[code]!;
    for (let i = 1; i <= M; i++) {
      const bit = 1 << (M - i);
      const substitute = eq & bit ? 0 : lookAlike & bit ? EDIT : extra;
      const v = Math.min(diag + substitute, column[i]! + extra, column[i - 1]! + EDIT + 1);
      diag = column[i]!;
      column[i] = v;
    }
    if (column[M]! <= best) {
      best = column[M]!;
      bestLen = len;
    }
  }
  return { start: end - bestLen + 1, score: best };
}

/** Most ends of one hit weighed against each other. */
const MAX_CANDIDATES = 32;
// process-wide scratch: the ends of the current zone, filled and read within one findMarkerWords call.
const candidates = new Int32Array(MAX_CANDIDATES);

function plainCount(codes: Uint8Array, start: number, end: number): number {
  let n = 0;
  for (let j = start; j <= end; j++) if (codes[j] !== 42) n++;
  return n;
}

/**
 * Calls `onHit(start, end)` (inclusive stream indices) for each stretch of the
 * stream that reads as the marker words, left to right, without overlaps.
 */
export function findMarkerWords(stream: LetterStream, onHit: (start: number, end: number) => void): void {
  const { codes, length } = stream;
  let pv = ALL;
  let mv = 0;
  let score = M;
  // The ends where the words are within MAX_EDITS, in the current zone of them.
  let zone = 0;
  /** Reports the best acceptable hit in the zone; returns its end, or -1 if there is none. */
  const settle = (): number => {
    let bestStart = -1;
    let bestEnd = -1;
    let best = Infinity;
    for (let z = 0; z < zone; z++) {
      const end = candidates[z]!;
      // Cheap bound first: a run of wildcards ("ᴇᴇᴇ…") is within reach everywhere.
      if (plainCount(codes, Math.max(0, end - M - MAX_EDITS + 1), end) < MIN_PLAIN) continue;
      const { start, score } = matchStart(codes, end);
      if (score % EDIT > MAX_PLAIN_EDITS || score > best) continue;
      if (plainCount(codes, start, end) < MIN_PLAIN) continue;
      best = score;
      bestStart = start;
      bestEnd = end;
    }
    if (bestEnd >= 0) onHit(bestStart, bestEnd);
    zone = 0;
    return bestEnd;
  };
  for (let j = 0; j < length; j++) {
    const code = codes[j]!;
    const zoneOver =
      zone > 0 && (zone === MAX_CANDIDATES || (score > MAX_EDITS && j - candidates[zone - 1]! > MAX_EDITS));
    if (zoneOver || code === BREAK) {
      const end = zone > 0 ? settle() : -1;
      if (end >= 0 || code === BREAK) {
        // Carry on just after the hit (or the break) with a fresh state; a
        // zone without an acceptable hit keeps the state: letters may follow.
        if (end >= 0) j = end;
        pv = ALL;
        mv = 0;
        score = M;
        continue;
      }
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
    if (score <= MAX_EDITS) candidates[zone++] = j;
  }
  if (zone > 0) settle();
}

/**
 * If the word "end" (one letter may differ) stands just before stream index
 * `start`, as a word of its own, returns the index of its first letter; else -1.
 */
export function endWordBefore(stream: LetterStream, start: number): number {
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
