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

/**
 * The letter stream of one text: entry i is stream code `codes[i]`, read
 * from `from[i]` to `to[i]` in the original text. The arrays are reused
 * (and grown) from one build() to the next, so a stream is scratch owned by
 * whoever builds into it; a build() replaces what the last one built.
 */
export class LetterStream {
  codes = new Uint8Array(1024);
  from = new Int32Array(1024);
  to = new Int32Array(1024);
  length = 0;
  /** Gap characters since the last letter. */
  private gap = 0;

  /** Builds the letter stream of `s`; returns this. */
  build(s: string, skipMarkup: boolean): this {
    const n = s.length;
    this.length = 0;
    this.gap = 0;
    for (let i = 0; i < n;) {
      const c = s.charCodeAt(i);
      if (c < 128) {
        if (c === 38) {
          // "&": a character reference reads as the character it stands for.
          const entity = entityAt(s, i);
          if (entity !== null) {
            for (const ch of entity.text) this.pushFold(foldCodePoint(ch.codePointAt(0)!), i, entity.end);
            i = entity.end;
            continue;
          }
        } else if (c === 60 && skipMarkup && this.gap === 0 && this.length > 0 && this.to[this.length - 1] === i) {
          TAG_RE.lastIndex = i;
          if (TAG_RE.test(s)) {
            const end = TAG_RE.lastIndex;
            // Keep the tag inside the word: the next letter continues it.
            this.to[this.length - 1] = end;
            i = end;
            continue;
          }
        }
        i = this.plainAsciiRun(s, i);
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
      if (f === '') this.joinIgnorable(i, i + len);
      else this.pushFold(f, i, i + len);
      i += len;
    }
    return this;
  }

  private ensureRoom(n: number): void {
    if (n <= this.codes.length) return;
    let size = this.codes.length;
    while (size < n) size *= 2;
    const biggerCodes = new Uint8Array(size);
    const biggerFrom = new Int32Array(size);
    const biggerTo = new Int32Array(size);
    biggerCodes.set(this.codes);
    biggerFrom.set(this.from);
    biggerTo.set(this.to);
    this.codes = biggerCodes;
    this.from = biggerFrom;
    this.to = biggerTo;
  }

  private push(code: number, start: number, end: number): void {
    this.ensureRoom(this.length + 2);
    const { codes, from, to } = this;
    let length = this.length;
    if (this.gap > MAX_GAP && length > 0 && codes[length - 1] !== BREAK) {
      codes[length] = BREAK;
      from[length] = start;
      to[length] = start;
      length++;
    }
    codes[length] = code;
    from[length] = start;
    to[length] = end;
    this.length = length + 1;
    this.gap = 0;
  }

  /** An ignorable keeps a word together ("E\u200bXTERNAL"): it joins the letter before it. */
  private joinIgnorable(i: number, end: number): void {
    if (this.length > 0 && this.gap === 0 && this.to[this.length - 1] === i) this.to[this.length - 1] = end;
  }

  private pushFold(f: string, start: number, end: number): void {
    if (f === GAP) this.gap++;
    else for (let j = 0; j < f.length; j++) this.push(f.charCodeAt(j), start, end);
  }

  /**
   * Reads ASCII from `i` up to the next "&", "<" or non-ASCII character (at
   * least one character) and returns where it stopped. The hot loop: locals only.
   */
  private plainAsciiRun(s: string, i: number): number {
    const n = s.length;
    // At most one entry per character, plus a break per MAX_GAP + 1 of them.
    this.ensureRoom(this.length + (n - i) + ((n - i) >> 4) + 2);
    const c0 = this.codes;
    const f0 = this.from;
    const t0 = this.to;
    let len = this.length;
    let g = this.gap;
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
    this.length = len;
    this.gap = g;
    return p;
  }
}
