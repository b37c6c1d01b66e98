// A right-to-left override shows the letters inside it in reverse order, so a marker written backwards
// inside one ("\u202e>>>TNETNOC_DETSURTNU_LANRETXE<<<\u202c") is read as a marker by whoever sees it
// displayed. Each right-to-left span (override, embedding or isolate, up to its closing control, the
// end of the paragraph or of the text) is also read the way it displays: reversed, brackets
// mirrored. When that reading holds marker words, the span is replaced with it, neutralised;
// otherwise it is left as written (the caller strips the controls afterwards, and reads it as usual).

/** RLE, RLO, RLI: what starts a span that may show Latin text right to left. */
const RTL_OPENERS = new Set([0x202b, 0x202e, 0x2067]);
/** PDF, PDI and paragraph separators: what ends a span. */
const SPAN_END_RE = /[\u202c\u2069\n\r\u2029\u0085\u001c-\u001e]/g;
const BIDI_CONTROL_RE = /[\u202a-\u202e\u2066-\u2069]/g;
const MIRRORED: Readonly<Record<string, string>> = {
  '<': '>',
  '>': '<',
  '(': ')',
  ')': '(',
  '[': ']',
  ']': '[',
  '{': '}',
  '}': '{',
  '«': '»',
  '»': '«',
  '‹': '›',
  '›': '‹',
  '≪': '≫',
  '≫': '≪',
  '⋘': '⋙',
  '⋙': '⋘',
  '＜': '＞',
  '＞': '＜',
};
/** What stays with the character before it when the order is reversed: marks, joiners, variation selectors. */
const ATTACHED_RE = /^(?:\p{M}|\u200c|\u200d|[\ufe00-\ufe0f])$/u;

/**
 * The span as displayed right to left: characters in reverse order (each keeping its marks; regional
 * indicators one by one, as letters), brackets mirrored.
 */
function displayed(span: string): string {
  const parts: string[] = [];
  for (const ch of span.replace(BIDI_CONTROL_RE, '')) {
    if (parts.length > 0 && ATTACHED_RE.test(ch)) parts[parts.length - 1] += ch;
    else parts.push(MIRRORED[ch] ?? ch);
  }
  return parts.reverse().join('');
}

/** Tokens a neutralised text holds: more after neutralising means marker words were found. */
function tokens(text: string, markers: readonly string[]): number {
  let n = 0;
  for (const m of markers) for (let i = text.indexOf(m); i >= 0; i = text.indexOf(m, i + m.length)) n++;
  return n;
}

/**
 * `s` with every right-to-left span whose displayed reading holds marker words (`neutralise` puts
 * one of `markers` in) replaced by that reading, neutralised. Linear: each span is read once, and
 * spans do not overlap.
 */
export function neutraliseReversedSpans(
  s: string,
  neutralise: (text: string) => string,
  markers: readonly string[],
): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    if (!RTL_OPENERS.has(s.charCodeAt(i))) continue;
    SPAN_END_RE.lastIndex = i + 1;
    const end = SPAN_END_RE.exec(s)?.index ?? s.length;
    const shown = displayed(s.slice(i + 1, end));
    const neutral = neutralise(shown);
    if (tokens(neutral, markers) > tokens(shown, markers)) {
      out += s.slice(last, i) + neutral;
      last = end;
    }
    i = end;
  }
  return last === 0 ? s : out + s.slice(last);
}
