import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The configured token, prepared once per config load. Tokens up to SLOT bytes are kept zero-padded to
 * SLOT bytes; longer ones as a sha256 digest.
 */
export interface TokenDigest {
  readonly bytes: number;
  readonly padded?: Buffer;
  readonly sha256?: Buffer;
}

const SLOT = 256;
/** The candidate is copied here for comparing; requests are handled one at a time on this thread. */
const scratch = Buffer.alloc(SLOT);

/** First value of a header that may have been delivered as an array. */
function firstValue(value: string | string[] | undefined): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  return value[0];
}

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/**
 * Token from `Bearer <t>`, or undefined when the value uses another scheme
 * or carries no token. The scheme is matched case-insensitively without
 * allocating a lower-cased copy.
 */
export function bearerToken(value: string): string | undefined {
  const len = value.length;
  let i = 0;
  while (i < len && isBlank(value.charCodeAt(i))) i++;
  // "bearer" plus at least one separating blank.
  if (len - i < 7) return undefined;
  if (
    (value.charCodeAt(i) | 0x20) !== 0x62 || // b
    (value.charCodeAt(i + 1) | 0x20) !== 0x65 || // e
    (value.charCodeAt(i + 2) | 0x20) !== 0x61 || // a
    (value.charCodeAt(i + 3) | 0x20) !== 0x72 || // r
    (value.charCodeAt(i + 4) | 0x20) !== 0x65 || // e
    (value.charCodeAt(i + 5) | 0x20) !== 0x72 || // r
    !isBlank(value.charCodeAt(i + 6))
  ) {
    return undefined;
  }
  const token = value.slice(i + 7).trim();
  return token.length > 0 ? token : undefined;
}

/** The trimmed value of a token header, or undefined when it is absent or blank. */
function headerToken(value: string | string[] | undefined): string | undefined {
  const token = firstValue(value)?.trim();
  return token ? token : undefined;
}

/**
 * The token a request carries: `Authorization: Bearer <t>` (scheme
 * case-insensitive, surrounding blanks trimmed), otherwise the
 * `x-service-token` header, otherwise `x-openclaw-token` (the carrier of
 * OpenClaw's built-in hooks, so senders moving over keep working). An
 * Authorization header with another scheme (or an empty bearer value) falls
 * through to the token headers. Returns undefined when none yields a
 * non-empty value. Array-valued headers use their first element.
 */
export function extractToken(headers: IncomingHttpHeaders): string | undefined {
  const auth = firstValue(headers.authorization);
  if (auth !== undefined) {
    const token = bearerToken(auth);
    if (token !== undefined) return token;
  }
  return headerToken(headers['x-service-token']) ?? headerToken(headers['x-openclaw-token']);
}

export function digestToken(token: string): TokenDigest {
  const bytes = Buffer.byteLength(token, 'utf8');
  if (bytes > SLOT) return { bytes, sha256: hash('sha256', token, 'buffer') };
  const padded = Buffer.alloc(SLOT);
  padded.write(token, 'utf8');
  return { bytes, padded };
}

/** True when the candidate is one of the tokens; each is compared in full, in constant time. */
export function matchesAnyToken(candidate: string | undefined, expected: readonly TokenDigest[]): boolean {
  let matched = false;
  for (const digest of expected) if (tokenMatches(candidate, digest)) matched = true;
  return matched;
}

/**
 * Constant-time comparison that reveals neither the content nor the length of the expected token:
 * the candidate is compared as SLOT zero-padded bytes (the same work whatever its length), and the
 * lengths are compared too, so a prefix or a NUL-padded candidate cannot match. Hashing would do the
 * same at several times the cost, on the path every wrong-token request takes.
 */
export function tokenMatches(candidate: string | undefined, expected: TokenDigest): boolean {
  if (candidate === undefined) return false;
  if (expected.sha256) return timingSafeEqual(hash('sha256', candidate, 'buffer'), expected.sha256);
  if (!expected.padded) return false;
  scratch.fill(0);
  scratch.write(candidate, 'utf8');
  const sameLength = Buffer.byteLength(candidate, 'utf8') === expected.bytes;
  const sameBytes = timingSafeEqual(scratch, expected.padded);
  return sameBytes && sameLength;
}
