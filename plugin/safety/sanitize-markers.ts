// Makes forged content markers in untrusted text inert (see marker-words.ts
// for the words, delimiter-runs.ts for the brackets) and strips bidi
// embedding, override and isolate controls, which can make text display in
// a different order than it is read.

import { neutraliseDelimiterRuns } from './delimiter-runs.ts';
import { MARKER_PIECES_RE } from './fuzzy-marker-words.ts';
import { TAG_SOURCE } from './letter-stream.ts';
import { neutraliseMarkerWords } from './marker-words.ts';

export { END_TOKEN, START_TOKEN } from './marker-words.ts';

const PRINTABLE_ASCII_RE = /^[\t\n\r\x20-\x7e]*$/;
const BIDI_CONTROL_RE = /[\u202a-\u202e\u2066-\u2069]/g;
const BRACKET_OR_REFERENCE_RE = /[<>&]|[^\x00-\x7f]/;
/** Three brackets one way, spaces between allowed: what a run needs in printable ASCII. */
const ASCII_RUN_RE = /<[ \t]{0,4}<[ \t]{0,4}<|>[ \t]{0,4}>[ \t]{0,4}>/;
/** Tags directly after a letter or digit: what the markup pass reads through. */
const TAGS_IN_WORD_RE = new RegExp(`([A-Za-z0-9])(?:${TAG_SOURCE})+`, 'g');

/**
 * For printable ASCII without character references, whose letter streams are
 * just its lower-cased letters and digits (without tags inside words for the
 * markup pass): could either stream hold the marker words?
 */
function asciiMightHoldWords(s: string): boolean {
  if (MARKER_PIECES_RE.test(s)) return true;
  return s.includes('<') && MARKER_PIECES_RE.test(s.replace(TAGS_IN_WORD_RE, '$1'));
}

/**
 * Neutralises anything in `content` that could be read as a start or end
 * marker. Text with nothing marker-like is returned unchanged.
 */
export function sanitizeMarkers(content: string): string {
  let s = typeof content === 'string' ? content : String(content);
  if (PRINTABLE_ASCII_RE.test(s) && !s.includes('&')) {
    // Plain ASCII without references: cheap native pre-checks first.
    if (asciiMightHoldWords(s)) {
      s = neutraliseMarkerWords(s, false);
      if (s.includes('<')) s = neutraliseMarkerWords(s, true);
    }
    return ASCII_RUN_RE.test(s) ? neutraliseDelimiterRuns(s) : s;
  }
  BIDI_CONTROL_RE.lastIndex = 0;
  if (BIDI_CONTROL_RE.test(s)) s = s.replace(BIDI_CONTROL_RE, '');
  s = neutraliseMarkerWords(s, false);
  if (s.includes('<')) s = neutraliseMarkerWords(s, true);
  if (BRACKET_OR_REFERENCE_RE.test(s)) s = neutraliseDelimiterRuns(s);
  return s;
}
