// Makes forged content markers in untrusted text inert (see marker-words.ts
// for the words, delimiter-runs.ts for the brackets) and strips bidi
// embedding, override and isolate controls, which can make text display in
// a different order than it is read (a marker written backwards inside a
// right-to-left span is read as displayed first: bidi-reversal.ts).

import { neutraliseReversedSpans } from './bidi-reversal.ts';
import { neutraliseDelimiterRuns } from './delimiter-runs.ts';
import { MARKER_PIECES_RE } from './fuzzy-marker-words.ts';
import { ENTITY_SOURCE, decodeReference } from './html-entity.ts';
import { TAG_SOURCE } from './letter-stream.ts';
import { END_TOKEN, START_TOKEN, neutraliseMarkerWords } from './marker-words.ts';

export { END_TOKEN, START_TOKEN } from './marker-words.ts';

const TOKENS = [START_TOKEN, END_TOKEN];
const PRINTABLE_ASCII_RE = /^[\t\n\r\x20-\x7e]*$/;
const BIDI_CONTROL_RE = /[\u202a-\u202e\u2066-\u2069]/g;
const BRACKET_OR_REFERENCE_RE = /[<>&]|[^\x00-\x7f]/;
/** Three brackets one way, spaces between allowed: what a run needs in printable ASCII. */
const ASCII_RUN_RE = /<[ \t]{0,4}<[ \t]{0,4}<|>[ \t]{0,4}>[ \t]{0,4}>/;
/** Tags directly after a letter, a digit or a reference: what the markup pass may read through. */
const TAGS_IN_WORD_RE = new RegExp(`([A-Za-z0-9]|${ENTITY_SOURCE})(?:${TAG_SOURCE})+`, 'g');
const REFERENCE_RE = new RegExp(ENTITY_SOURCE, 'g');
const ENDS_IN_LETTER_RE = /[A-Za-z0-9]$/;
/**
 * Our own markers, exactly as the wrapper writes them: what a model that echoes its prompt sends
 * back. Replaced natively first, so such a reply does not take the full reading.
 */
const EXACT_MARKER_RE = /<<<(END_)?EXTERNAL_UNTRUSTED_CONTENT(?: id="[0-9a-f]{1,64}")?>>>/g;

function dropTagsInWords(match: string, before: string): string {
  // After a reference only if it stands for a letter: then the tags are inside a word.
  return before.length === 1 || ENDS_IN_LETTER_RE.test(decodeReference(before)) ? before : match;
}

function decodeReferences(s: string): string {
  return s.includes('&') ? s.replace(REFERENCE_RE, decodeReference) : s;
}

/**
 * For printable ASCII, whose letter streams are its letters and digits once
 * references are decoded (without tags inside words for the markup pass):
 * could either stream hold the marker words? Null when a reference stands
 * for something outside printable ASCII: then the full reading decides.
 */
function asciiMightHoldWords(s: string): boolean | null {
  const read = decodeReferences(s);
  if (read !== s && !PRINTABLE_ASCII_RE.test(read)) return null;
  if (MARKER_PIECES_RE.test(read)) return true;
  return s.includes('<') && MARKER_PIECES_RE.test(decodeReferences(s.replace(TAGS_IN_WORD_RE, dropTagsInWords)));
}

/**
 * Both readings: through tags inside words first, so a tag's letters cannot
 * make a partial hit that cuts the tag ("&#69;<b></b>XTERNAL"); then as
 * written, for markers carried by a tag itself ("</external untrusted content>").
 */
function neutraliseWords(s: string): string {
  const t = s.includes('<') ? neutraliseMarkerWords(s, true) : s;
  return neutraliseMarkerWords(t, false);
}

/**
 * Neutralises anything in `content` that could be read as a start or end
 * marker. Text with nothing marker-like is returned unchanged.
 */
export function sanitizeMarkers(content: string): string {
  let s = typeof content === 'string' ? content : String(content);
  if (PRINTABLE_ASCII_RE.test(s)) {
    // Plain ASCII: cheap native pre-checks first.
    if (s.includes('<<<'))
      s = s.replace(EXACT_MARKER_RE, (_m, end: string | undefined) => (end ? END_TOKEN : START_TOKEN));
    const mightHold = asciiMightHoldWords(s);
    if (mightHold !== null) {
      if (mightHold) s = neutraliseWords(s);
      return ASCII_RUN_RE.test(decodeReferences(s)) ? neutraliseDelimiterRuns(s) : s;
    }
  }
  BIDI_CONTROL_RE.lastIndex = 0;
  if (BIDI_CONTROL_RE.test(s)) {
    s = neutraliseReversedSpans(s, sanitizeMarkers, TOKENS).replace(BIDI_CONTROL_RE, '');
  }
  s = neutraliseWords(s);
  if (BRACKET_OR_REFERENCE_RE.test(s)) s = neutraliseDelimiterRuns(s);
  return s;
}
