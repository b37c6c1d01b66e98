// The readable text of an HTML mail part: scripts, styles and comments dropped, block ends as line
// breaks, tags removed, entities decoded, whitespace tidied. Not a renderer: enough for an agent to read.
import { decodeHTML } from 'entities/decode';

const DROPPED = /<(script|style|head|title|template)\b[^>]*>[\s\S]*?<\/\1\s*>/gi;
const COMMENT = /<!--[\s\S]*?-->/g;
const BREAK =
  /<br\b[^>]*>|<\/(p|div|li|tr|h[1-6]|blockquote|pre|table|section|article|header|footer)\s*>|<(p|div|li|tr|h[1-6]|hr)\b[^>]*>/gi;
const TAG = /<\/?[A-Za-z][^>]*>|<![^>]*>/g;

export function htmlToText(html: string): string {
  const text = decodeHTML(html.replace(DROPPED, ' ').replace(COMMENT, ' ').replace(BREAK, '\n').replace(TAG, ''));
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
