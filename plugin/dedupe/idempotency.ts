// Which idempotency key a request carries: the Idempotency-Key header, or a key a mapping or a
// sender's delivery id gives.
import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { refuse } from '../errors.ts';

const MAX_KEY = 256;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** The Idempotency-Key header: 1–256 printable ASCII characters, else 400; undefined when absent. */
export function idempotencyKeyHeader(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['idempotency-key'];
  if (value === undefined) return undefined;
  const key = Array.isArray(value) ? value[0] : value;
  if (key === undefined || key.length === 0 || key.length > MAX_KEY || !PRINTABLE_ASCII.test(key)) {
    throw refuse.invalidIdempotencyKey();
  }
  return key;
}

/**
 * A key a mapping rendered or a sender supplied (delivery ids): blank means no dedupe; one longer
 * than the header allows is kept as its digest.
 */
export function derivedKey(value: string | undefined): string | undefined {
  const key = value?.trim();
  if (!key) return undefined;
  return key.length > MAX_KEY ? `sha256:${hash('sha256', key, 'hex')}` : key;
}
