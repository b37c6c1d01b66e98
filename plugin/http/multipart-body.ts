// multipart/form-data bodies (Mailgun and SendGrid inbound mail, HTML form posts), for mappings with
// `body: "multipart"`: fields become strings (repeated fields arrays); a file part becomes
// `{ filename, contentType, size }` and its content is dropped here, never copied nor kept. The body is
// already in memory within the mapping's limit, so this is one pass over it: every search moves
// forward, the boundary is at most 70 bytes, a part's headers at most MAX_HEADER_BYTES, and the number
// of parts at most `maxParts`. A urlencoded body (Mailgun sends one when a mail has no attachment) is
// read as a form. A body of many parts is read in slices with a turn of the event loop between them,
// so other requests are answered meanwhile (maxParts may be 10,000).
import { setImmediate as nextTurn } from 'node:timers/promises';
import { refuse } from '../errors.ts';
import { parseFormObject } from './form-body.ts';

/** A file part as templates and transforms see it: its content never leaves the parser. */
export interface FilePart {
  filename: string;
  contentType: string;
  size: number;
}

/** Parts read between two turns of the event loop. */
const PARTS_PER_SLICE = 256;
/** A part's header block; a browser's is a few hundred bytes. */
const MAX_HEADER_BYTES = 8192;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');
/** RFC 2046: 1 to 70 characters from this set, not ending in a space. */
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

const invalid = (what: string) => refuse.invalidBody(what);

export async function parseMultipartObject(
  body: Buffer,
  contentType: string | undefined,
  maxParts: number,
): Promise<Record<string, unknown>> {
  const type = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') return parseFormObject(body);
  if (type !== 'multipart/form-data') {
    throw invalid('the body must be multipart/form-data (or application/x-www-form-urlencoded)');
  }
  const boundary = parameter(contentType!, 'boundary');
  if (boundary === undefined || !BOUNDARY.test(boundary)) {
    throw invalid('the Content-Type has no valid multipart boundary');
  }
  const fields = new Map<string, unknown>();
  // The arrays of repeated fields are ours: appended to in place (a copy per part is quadratic).
  const repeated = new Set<unknown[]>();
  let parts = 0;
  for (const part of splitParts(body, Buffer.from(`\r\n--${boundary}`, 'latin1'))) {
    if (++parts > maxParts) throw invalid(`the body has more than ${maxParts} parts`);
    if (parts % PARTS_PER_SLICE === 0) await nextTurn();
    const [name, value] = readPart(body, part.start, part.end);
    const had = fields.get(name);
    if (had === undefined) fields.set(name, value);
    else if (Array.isArray(had) && repeated.has(had)) had.push(value);
    else {
      const values = [had, value];
      repeated.add(values);
      fields.set(name, values);
    }
  }
  if (fields.size === 0) throw invalid('the body is an empty form');
  // fromEntries defines own properties, so a field named __proto__ is only a field.
  return Object.fromEntries(fields);
}

/**
 * The parts between the delimiters, as [start, end) byte ranges. `delimiter` is CRLF "--" boundary; the
 * first one may open the body without its CRLF. A match not followed by "--" or by blanks and CRLF is
 * part of the content, as RFC 2046 has it, and the search goes on past it.
 */
function* splitParts(body: Buffer, delimiter: Buffer): Generator<{ start: number; end: number }> {
  // Where the delimiter's CRLF is (or would be: at -2 for a body that opens with "--boundary").
  const opensWithIt = body.subarray(0, delimiter.length - 2).equals(delimiter.subarray(2));
  let at = opensWithIt ? -2 : nextDelimiter(body, delimiter, 0);
  if (at === -1) throw invalid('the multipart body has no boundary line');
  for (;;) {
    let pos = at + delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return; // "--": the closing delimiter
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++;
    if (body[pos] !== 0x0d || body[pos + 1] !== 0x0a) throw invalid('a multipart boundary line is malformed');
    const start = pos + 2;
    const end = nextDelimiter(body, delimiter, start);
    if (end < 0) throw invalid('the multipart body is cut off (no closing boundary)');
    yield { start, end };
    at = end;
  }
}

/** The next real delimiter at or after `from`, or -1. */
function nextDelimiter(body: Buffer, delimiter: Buffer, from: number): number {
  for (let i = body.indexOf(delimiter, from); i >= 0; i = body.indexOf(delimiter, i + 1)) {
    let pos = i + delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return i;
    while (body[pos] === 0x20 || body[pos] === 0x09) pos++;
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) return i;
  }
  return -1;
}

/** A part's field name and value: its text, or what is said of its file. */
function readPart(body: Buffer, start: number, end: number): [string, string | FilePart] {
  // A part may have no headers at all (it then starts with the blank line), which leaves it nameless.
  const headEnd = body.subarray(start, Math.min(end, start + MAX_HEADER_BYTES + 4)).indexOf(HEADER_END);
  const blankFirst = end - start >= 2 && body[start] === 0x0d && body[start + 1] === 0x0a;
  if (headEnd < 0 && !blankFirst) {
    throw invalid(
      end - start > MAX_HEADER_BYTES
        ? 'a multipart part has headers over 8192 bytes'
        : 'a multipart part has no blank line after its headers',
    );
  }
  const head = blankFirst ? '' : body.toString('utf8', start, start + headEnd);
  const contentStart = blankFirst ? start + 2 : start + headEnd + HEADER_END.length;
  let disposition: string | undefined;
  let type: string | undefined;
  for (const line of head.split(CRLF.toString())) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (name === 'content-disposition') disposition = line.slice(colon + 1);
    else if (name === 'content-type') type = line.slice(colon + 1).trim();
  }
  if (disposition === undefined || disposition.split(';', 1)[0]!.trim().toLowerCase() !== 'form-data') {
    throw invalid('a multipart part is not Content-Disposition: form-data');
  }
  const name = parameter(disposition, 'name');
  if (!name) throw invalid('a multipart part has no field name');
  const filename = parameter(disposition, 'filename*') ?? parameter(disposition, 'filename');
  if (filename === undefined) return [name, body.toString('utf8', contentStart, end)];
  return [name, { filename, contentType: type || 'application/octet-stream', size: end - contentStart }];
}

/**
 * A parameter of a header value (`; name="value"` or `; name=value`), or undefined. Quoted values may
 * escape with a backslash; `filename*` in RFC 5987 form (`utf-8''%E2%82%AC.txt`) is decoded.
 */
function parameter(header: string, wanted: string): string | undefined {
  let i = header.indexOf(';');
  while (i >= 0 && i < header.length) {
    i++;
    while (header[i] === ' ' || header[i] === '\t') i++;
    const eq = header.indexOf('=', i);
    if (eq < 0) return undefined;
    const name = header.slice(i, eq).trim().toLowerCase();
    let value = '';
    let j = eq + 1;
    while (header[j] === ' ' || header[j] === '\t') j++;
    if (header[j] === '"') {
      for (j++; j < header.length && header[j] !== '"'; j++) {
        if (header[j] === '\\' && j + 1 < header.length) j++;
        value += header[j];
      }
      j = header.indexOf(';', j);
    } else {
      const semi = header.indexOf(';', j);
      value = header.slice(j, semi < 0 ? undefined : semi).trim();
      j = semi;
    }
    if (name === wanted) return wanted.endsWith('*') ? extendedValue(value) : value;
    i = j;
  }
  return undefined;
}

/** RFC 5987: charset'language'percent-encoded; undefined when it does not decode (the plain form is used). */
function extendedValue(value: string): string | undefined {
  const m = /^utf-8'[^']*'(.*)$/i.exec(value);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return undefined;
  }
}
