// Makes forged content markers in untrusted text inert (see marker-words.ts
// for the words, delimiter-runs.ts for the brackets) and strips bidi
// embedding, override and isolate controls, which can make text display in
// a different order than it is read.

import { neutraliseDelimiterRuns } from './delimiter-runs.ts';
import { MARKER_PIECES_RE } from './fuzzy-marker-words.ts';
import { neutraliseMarkerWords } from './marker-words.ts';

export { END_TOKEN, START_TOKEN } from './marker-words.ts';

const PRINTABLE_ASCII_RE = /^[\t\n\r\x20-\x7e]*$/;
const NOT_LETTER_OR_DIGIT_RE = /[^a-z0-9]+/g;
const BIDI_CONTROL_RE = /[\u202a-\u202e\u2066-\u2069]/g;
const BRACKET_OR_REFERENCE_RE = /[<>&]|[^\x00-\x7f]/;

/**
 * Neutralises anything in `content` that could be read as a start or end
 * marker. Text with nothing marker-like is returned unchanged.
 */
export function sanitizeMarkers(content: string): string {
  let s = typeof content === 'string' ? content : String(content);
  if (PRINTABLE_ASCII_RE.test(s) && !s.includes('&') && !s.includes('<')) {
    // Plain ASCII with no references and no tags: its letters are the stream,
    // and without "<" there is no delimiter shape.
    if (!MARKER_PIECES_RE.test(s.toLowerCase().replace(NOT_LETTER_OR_DIGIT_RE, ''))) return s;
    return neutraliseMarkerWords(s, false);
  }
  BIDI_CONTROL_RE.lastIndex = 0;
  if (BIDI_CONTROL_RE.test(s)) s = s.replace(BIDI_CONTROL_RE, '');
  s = neutraliseMarkerWords(s, false);
  if (s.includes('<')) s = neutraliseMarkerWords(s, true);
  if (BRACKET_OR_REFERENCE_RE.test(s)) s = neutraliseDelimiterRuns(s);
  return s;
}
