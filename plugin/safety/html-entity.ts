// Decodes one HTML character reference ("&#69;", "&#x45;", "&Escr;", "&lt")
// in place, so matching sees "E" where a reader (or a model) would.

import { decodeHTML } from 'entities/decode';

/** A character reference, possibly without its ";" (HTML accepts some that way). */
export const ENTITY_SOURCE = '&(?:#[xX][0-9a-fA-F]{1,8}|#[0-9]{1,10}|[A-Za-z][A-Za-z0-9]{1,31});?';
const ENTITY_RE = new RegExp(ENTITY_SOURCE, 'y');

export interface Entity {
  text: string;
  /** Index just past the reference. */
  end: number;
}

/** Decoded references seen lately ("&amp;" comes up in every HTML payload). */
const decoded = new Map<string, string>();
const DECODED_MAX = 1024;

/** What a text matching ENTITY_SOURCE reads as (itself if it is no reference). */
export function decodeReference(reference: string): string {
  let text = decoded.get(reference);
  if (text === undefined) {
    text = decodeHTML(reference);
    if (decoded.size >= DECODED_MAX) decoded.clear();
    decoded.set(reference, text);
  }
  return text;
}

/** The character reference starting at `i` (where s[i] is "&"), or null if there is none. */
export function entityAt(s: string, i: number): Entity | null {
  ENTITY_RE.lastIndex = i;
  const m = ENTITY_RE.exec(s);
  if (m === null) return null;
  const text = decodeReference(m[0]);
  return text === m[0] ? null : { text, end: i + m[0].length };
}
