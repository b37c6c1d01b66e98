// A record as the JSON of one log line, without copying its large strings. JSON.stringify of a record
// holding a 200 KB text builds that text again on the heap (and drafts of it as it grows), where it
// waits for a full garbage collection; a flood of large events then grows the heap by hundreds of MB.
// A large string that needs no escaping is kept by reference instead and copied once, into the buffer
// written to the file.

/** Strings at least this long are kept by reference when they need no escaping. */
const LARGE = 16 * 1024;
/**
 * Text JSON.stringify writes as it is: no quote, backslash, control character or (lone) surrogate.
 * Anchored, a run over the whole text is twice as fast as searching for the first such character.
 */
const JSON_SAFE = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/**
 * The record's JSON: one string, or pieces to be written one after another, where every other piece
 * is a large string standing between its quotes as itself.
 */
export type JsonLine = string | readonly string[];

export function toJsonLine(record: object): JsonLine {
  const fields = record as Record<string, unknown>;
  let large = false;
  for (const key in fields) {
    const value = fields[key];
    if (typeof value === 'string' && value.length >= LARGE) large = true;
  }
  if (!large) return JSON.stringify(record);

  const pieces: string[] = [];
  let text = '{';
  let count = 0;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    const name = `${count > 0 ? ',' : ''}${JSON.stringify(key)}:`;
    if (typeof value === 'string' && value.length >= LARGE && JSON_SAFE.test(value)) {
      pieces.push(`${text}${name}"`, value);
      text = '"';
      count++;
      continue;
    }
    const json = JSON.stringify(value);
    if (json === undefined) continue; // left out, as JSON.stringify leaves out undefined and functions
    text += name + json;
    count++;
  }
  pieces.push(`${text}}`);
  return pieces;
}

export function jsonLineText(line: JsonLine): string {
  return typeof line === 'string' ? line : line.join('');
}

export function jsonLineBytes(line: JsonLine): number {
  if (typeof line === 'string') return Buffer.byteLength(line);
  let n = 0;
  for (const piece of line) n += Buffer.byteLength(piece);
  return n;
}

/** Writes the line at `at` (the buffer has room); returns the offset after it. */
export function writeJsonLine(line: JsonLine, into: Buffer, at: number): number {
  if (typeof line === 'string') return at + into.write(line, at);
  for (const piece of line) at += into.write(piece, at);
  return at;
}
