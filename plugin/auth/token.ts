import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** sha256 digest of the configured token; compute once per config load. */
export type TokenDigest = Buffer;

const DIGEST_BYTES = 32;

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
function bearerToken(value: string): string | undefined {
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

/**
 * The token a request carries: `Authorization: Bearer <t>` (scheme
 * case-insensitive, surrounding blanks trimmed), otherwise the
 * `x-service-token` header. An Authorization header with another scheme (or
 * an empty bearer value) falls through to `x-service-token`. Returns
 * undefined when neither yields a non-empty value. Array-valued headers use
 * their first element.
 */
export function extractToken(headers: IncomingHttpHeaders): string | undefined {
  const auth = firstValue(headers.authorization);
  if (auth !== undefined) {
    const token = bearerToken(auth);
    if (token !== undefined) return token;
  }
  const service = firstValue(headers['x-service-token']);
  if (service !== undefined) {
    const token = service.trim();
    if (token.length > 0) return token;
  }
  return undefined;
}

/** sha256 of the utf8 bytes of `token`. */
export function digestToken(token: string): TokenDigest {
  return hash('sha256', token, 'buffer');
}

/**
 * Constant-time comparison. The candidate is hashed first, so both sides of
 * timingSafeEqual are always 32 bytes and neither the content nor the length
 * of the expected token influences timing.
 */
export function tokenMatches(candidate: string | undefined, expected: TokenDigest): boolean {
  if (candidate === undefined || expected.length !== DIGEST_BYTES) return false;
  return timingSafeEqual(hash('sha256', candidate, 'buffer'), expected);
}
