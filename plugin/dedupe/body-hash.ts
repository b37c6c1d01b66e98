// The fingerprint kept beside an idempotency key, so that a key sent again with another body is told
// apart from a retry: the first 64 bits of the raw body's SHA-256, as 16 hex digits on disk and in
// Redis. In memory each key keeps it as two 31-bit halves, which V8 stores inline in the key's
// object as small integers; a string would be an object of its own per key.
import { hash } from 'node:crypto';

export interface BodyHash {
  readonly hex: string;
  readonly hi: number;
  readonly lo: number;
}

const HEX16 = /^[0-9a-f]{16}$/;

export function bodyHashOf(raw: Buffer): BodyHash {
  return halves(hash('sha256', raw, 'hex').slice(0, 16));
}

/** A hash as kept on disk or in Redis; undefined when absent or not one (a key kept without it). */
export function parseBodyHash(hex: unknown): BodyHash | undefined {
  return typeof hex === 'string' && HEX16.test(hex) ? halves(hex) : undefined;
}

/** Both known and different: the same key was sent with another body. */
export function otherBody(
  kept: { readonly hi?: number | undefined; readonly lo?: number | undefined } | undefined,
  sent: BodyHash | undefined,
): boolean {
  return kept?.hi !== undefined && sent !== undefined && (kept.hi !== sent.hi || kept.lo !== sent.lo);
}

function halves(hex: string): BodyHash {
  // `| 0` makes a 32-bit integer, `>> 1` one of 31 bits: a small integer for V8.
  return {
    hex,
    hi: (Number.parseInt(hex.slice(0, 8), 16) | 0) >> 1,
    lo: (Number.parseInt(hex.slice(8), 16) | 0) >> 1,
  };
}
