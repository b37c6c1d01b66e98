// Neutralises look-alikes of the marker delimiters "<<<" and ">>>", whatever
// is between them: this does not depend on recognising the words at all.
//
// A run is a sequence of angle brackets pointing the same way (angle-brackets.ts,
// HTML references such as "&lt;" included), possibly with spaces or invisible
// characters between equal ones. A run that reads as three or more brackets is
// collapsed to a single ASCII bracket when
//   - it is not plain ASCII ("‹‹‹", "≪<", "< < <", "&lt;&lt;&lt;") and it
//     touches a word the way a marker delimiter does (an opening run before
//     it, a closing run after it or after a quote); or
//   - it is a plain "<<<" directly followed by a word (or "/") and, later on
//     the same line, by a ">>>" directly after a non-space (the "<<<WORD…>>>"
//     shape of a marker); both runs are collapsed.
// Plain runs in other shapes stay as they are: shell here-strings "<<<",
// Python prompts ">>>", merge-conflict lines "<<<<<<< HEAD".

import { angleOf } from './angle-brackets.ts';
import { foldCodePoint } from './char-fold.ts';
import { entityAt } from './html-entity.ts';

const MIN_WEIGHT = 3;
/** Most filler characters (spaces, invisibles) allowed between two equal brackets of a run. */
const MAX_FILLER = 4;
/** Longest stretch between "<<<" and ">>>" still taken as one marker shape. */
const MAX_SHAPE = 256;

const LINE_BREAK_RE = /[\n\r\v\f\u0085\u2028\u2029]/;
const WORD_CHAR_RE = /^[\p{L}\p{N}_]$/u;
const WORD_END_RE = /^[\p{L}\p{N}_\p{Pi}\p{Pf}"'/]$/u;

function isFiller(cp: number): boolean {
  if (cp === 32 || cp === 9 || cp === 0xa0 || cp === 0x3000 || (cp >= 0x2000 && cp <= 0x200a)) return true;
  return cp >= 128 && foldCodePoint(cp) === '';
}

interface Run {
  start: number;
  end: number;
  /** 1 for opening brackets, -1 for closing ones. */
  dir: number;
  weight: number;
  plain: boolean;
}

/** Runs of three or more brackets in `s`, in order. */
function findRuns(s: string): Run[] {
  const runs: Run[] = [];
  // The open run, if start >= 0; kept in locals: most text has no runs at all.
  let start = -1;
  let end = 0;
  let dir = 0;
  let weight = 0;
  let plain = true;
  let filler = 0;
  let previous = -1; // the last bracket's code point
  let referenced = false; // whether the open run is made of character references
  const n = s.length;
  for (let i = 0; i < n;) {
    let cp = s.charCodeAt(i);
    if (start < 0 && cp < 128 && cp !== 60 && cp !== 62 && cp !== 38) {
      i++;
      continue;
    }
    if (cp >= 0xd800 && cp <= 0xdbff) cp = s.codePointAt(i)!;
    let next = i + (cp > 0xffff ? 2 : 1);
    let isPlain = cp === 60 || cp === 62;
    let isReference = false;
    if (cp === 38) {
      const entity = entityAt(s, i);
      if (entity !== null && entity.text.length <= 2) {
        cp = entity.text.codePointAt(0)!;
        next = entity.end;
        isPlain = false;
        isReference = true;
      }
    }
    const w = angleOf(cp);
    if (w !== 0) {
      const d = w > 0 ? 1 : -1;
      // Fillers only join equal brackets ("< < <"): "« <p>" is a quote and a tag.
      // References and characters do not mix: in "&lt;&lt;</span>" one is text, the other markup.
      const joins = filler === 0 || (filler <= MAX_FILLER && cp === previous);
      if (start >= 0 && d === dir && joins && isReference === referenced) {
        end = next;
        weight += w * d;
        plain = plain && isPlain && filler === 0;
      } else {
        if (start >= 0 && weight >= MIN_WEIGHT) runs.push({ start, end, dir, weight, plain });
        start = i;
        end = next;
        dir = d;
        weight = w * d;
        plain = isPlain;
        referenced = isReference;
      }
      filler = 0;
      previous = cp;
    } else if (start >= 0 && isFiller(cp)) {
      filler++;
    } else {
      if (start >= 0 && weight >= MIN_WEIGHT) runs.push({ start, end, dir, weight, plain });
      start = -1;
      filler = 0;
    }
    i = next;
  }
  if (start >= 0 && weight >= MIN_WEIGHT) runs.push({ start, end, dir, weight, plain });
  return runs;
}

/** Does the run touch a word: an opening run followed by one, a closing run preceded by one? */
function touchesWord(s: string, run: Run): boolean {
  if (run.dir > 0) {
    let p = run.end;
    for (let n = 0; p < s.length && n < MAX_FILLER; n++) {
      const cp = s.codePointAt(p)!;
      if (cp !== 47 && !isFiller(cp)) break;
      p += cp > 0xffff ? 2 : 1;
    }
    const cp = s.codePointAt(p);
    return cp !== undefined && WORD_CHAR_RE.test(String.fromCodePoint(cp));
  }
  let p = run.start;
  for (let n = 0; p > 0 && n < MAX_FILLER; n++) {
    const cp = codePointBefore(s, p);
    if (!isFiller(cp)) break;
    p -= cp > 0xffff ? 2 : 1;
  }
  return p > 0 && WORD_END_RE.test(String.fromCodePoint(codePointBefore(s, p)));
}

function codePointBefore(s: string, i: number): number {
  const c = s.charCodeAt(i - 1);
  if (c >= 0xdc00 && c <= 0xdfff && i >= 2) {
    const h = s.charCodeAt(i - 2);
    if (h >= 0xd800 && h <= 0xdbff) return ((h - 0xd800) << 10) + (c - 0xdc00) + 0x10000;
  }
  return c;
}

/** Does the plain opening run `open` start a "<<<WORD…>>>" shape closed by `close`? */
function isMarkerShape(s: string, open: Run, close: Run | undefined): boolean {
  if (close === undefined || close.start - open.end > MAX_SHAPE) return false;
  const p = s[open.end] === '/' ? open.end + 1 : open.end;
  const first = s.codePointAt(p);
  if (first === undefined || !WORD_CHAR_RE.test(String.fromCodePoint(first))) return false;
  if (/\s/.test(s[close.start - 1]!)) return false;
  return !LINE_BREAK_RE.test(s.slice(open.end, close.start));
}

/** Collapses delimiter look-alikes in `s`; returns `s` itself when there is none. */
export function neutraliseDelimiterRuns(s: string): string {
  const runs = findRuns(s);
  if (runs.length === 0) return s;
  const doomed = runs.map((run) => !run.plain && touchesWord(s, run));
  // Right to left, so each opening run knows the next closing one at once.
  let nextClose = -1;
  for (let r = runs.length - 1; r >= 0; r--) {
    const run = runs[r]!;
    if (run.dir < 0) {
      nextClose = r;
    } else if (run.plain && nextClose >= 0 && isMarkerShape(s, run, runs[nextClose])) {
      doomed[r] = true;
      doomed[nextClose] = true;
    }
  }
  let out = '';
  let last = 0;
  for (let r = 0; r < runs.length; r++) {
    if (!doomed[r]) continue;
    const run = runs[r]!;
    out += s.slice(last, run.start) + (run.dir > 0 ? '<' : '>');
    last = run.end;
  }
  return last === 0 ? s : out + s.slice(last);
}
