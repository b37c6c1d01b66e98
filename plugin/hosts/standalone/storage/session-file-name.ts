// A session's file name: the UTF-8 bytes of its key with [a-z0-9_-] kept and every other byte escaped
// as "%xx", so no name holds "/", "\", "." or upper case; names too long end in "~" and a hash of the
// key (README.md states the rule).
import { createHash } from 'node:crypto';

export const SUFFIX = '.jsonl';
/** Well below the usual 255-byte limit for one path component. */
const MAX_NAME_BYTES = 200;
const HASHED_PREFIX_BYTES = 120;

function keptByte(b: number): boolean {
  return (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x5f;
}

function encodeKey(key: string): string {
  let out = '';
  for (const b of Buffer.from(key, 'utf8')) {
    out += keptByte(b) ? String.fromCharCode(b) : '%' + b.toString(16).padStart(2, '0');
  }
  return out;
}

/** The file name (not path) holding a session's history. */
export function sessionFileName(key: string): string {
  const encoded = encodeKey(key);
  if (encoded.length + SUFFIX.length <= MAX_NAME_BYTES) return encoded + SUFFIX;
  let prefix = encoded.slice(0, HASHED_PREFIX_BYTES);
  // Do not leave a cut-off "%x" escape at the end of the prefix.
  const lastEscape = prefix.lastIndexOf('%');
  if (lastEscape >= 0 && lastEscape > prefix.length - 3) prefix = prefix.slice(0, lastEscape);
  const hash = createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 40);
  return `${prefix}~${hash}${SUFFIX}`;
}

/** Reverses sessionFileName for names without a hash; undefined when the name is not decodable. */
export function decodeSessionFileName(name: string): string | undefined {
  if (!name.endsWith(SUFFIX)) return undefined;
  const encoded = name.slice(0, -SUFFIX.length);
  if (encoded === '' || !/^(?:[a-z0-9_-]|%[0-9a-f]{2})+$/.test(encoded)) return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length;) {
    if (encoded[i] === '%') {
      bytes.push(parseInt(encoded.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      bytes.push(encoded.charCodeAt(i));
      i += 1;
    }
  }
  const key = Buffer.from(bytes).toString('utf8');
  // Invalid UTF-8 or a non-canonical spelling does not round-trip.
  return sessionFileName(key) === name ? key : undefined;
}
