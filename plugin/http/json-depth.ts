// How deeply a JSON text nests, read from its bytes before it is parsed. Templates and transforms
// walk a mapped payload recursively; a body of a hundred thousand nested arrays would overflow the
// stack there, so a mapped hook refuses it up front as an input error.

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The deepest a mapped payload may nest (GitHub's deepest events nest about ten levels). */
export const MAX_JSON_DEPTH = 128;

/** True when the JSON text nests deeper than max (strings are skipped, escapes included). */
export function nestsDeeperThan(body: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}
