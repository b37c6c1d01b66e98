// The building blocks every scheme uses: header values, HMACs over the raw bytes, decoding what the
// sender sent, and comparisons whose time does not depend on where the bytes differ.
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export type Algorithm = 'sha1' | 'sha256' | 'sha512';

/** The first value of a header, or undefined. */
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? v[0] : undefined;
}

/** HMAC of the parts in order; the body is never copied into a string. */
export function hmac(algorithm: Algorithm, key: Buffer, ...parts: (string | Buffer)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

const HEX = /^[0-9a-fA-F]*$/;

/** Bytes of a hex or base64 text; an empty buffer when it is not well-formed (it then matches nothing). */
export function decode(text: string, encoding: 'hex' | 'base64'): Buffer {
  const t = text.trim();
  if (encoding === 'hex') return t.length % 2 === 0 && HEX.test(t) ? Buffer.from(t, 'hex') : Buffer.alloc(0);
  return Buffer.from(t, 'base64');
}

/** Equal bytes, compared in constant time for equal lengths (digests have a public length). */
export function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && a.length > 0 && timingSafeEqual(a, b);
}

/**
 * Equal secrets of any length: both are hashed first, so neither content nor length leaks. An empty
 * secret matches nothing (the config refuses short ones; this holds whatever reaches here).
 */
export function sameSecret(candidate: string, secret: Buffer): boolean {
  const equal = timingSafeEqual(hash('sha256', candidate, 'buffer'), hash('sha256', secret, 'buffer'));
  return equal && secret.length > 0;
}

/**
 * True when one of the keys gives the expected digest (every key is tried: no early exit per key).
 * An empty key verifies nothing: anyone can compute an HMAC with it.
 */
export function anyKeyMatches(
  keys: readonly Buffer[],
  provided: readonly Buffer[],
  digest: (key: Buffer) => Buffer,
): boolean {
  let matched = false;
  for (const key of keys) {
    if (key.length === 0) continue;
    const expected = digest(key);
    for (const p of provided) if (sameBytes(expected, p)) matched = true;
  }
  return matched;
}

/** A Unix time in seconds as sent (digits only), or undefined. */
export function seconds(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,12}$/.test(text.trim())) return undefined;
  return Number(text.trim());
}

/** Within the window on both sides: neither too old nor too far in the future. */
export function withinWindow(sentSeconds: number, nowMs: number, toleranceSeconds: number): boolean {
  return Math.abs(nowMs / 1000 - sentSeconds) <= toleranceSeconds;
}
