// Which idempotency key a request carries: the Idempotency-Key header, or a key a mapping or a
// sender's delivery id gives; for a forEach whose key reads the item, one key per item.
import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { refuse } from '../errors.ts';
import type { CompiledMapping } from '../mappings/mapping.ts';
import type { Template } from '../mappings/template.ts';
import { renderDedupeKey, type ForEachItem, type MappedRequest } from '../mappings/build-action.ts';

const MAX_KEY = 256;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** The Idempotency-Key header: 1–256 printable ASCII characters, else 400; undefined when absent. */
export function idempotencyKeyHeader(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['idempotency-key'];
  if (value === undefined) return undefined;
  const key = validHeaderKey(headers);
  if (key === undefined) throw refuse.invalidIdempotencyKey();
  return key;
}

/** The Idempotency-Key header when it is valid; undefined when absent or not (the plan refuses it). */
export function validHeaderKey(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['idempotency-key'];
  const key = Array.isArray(value) ? value[0] : value;
  if (key === undefined || key.length === 0 || key.length > MAX_KEY || !PRINTABLE_ASCII.test(key)) return undefined;
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

/** The key a request (or a forEach item) is claimed by, scoped by endpoint (`wake`, `agent`) or by `mapping:<id>`. */
export interface DedupeKey {
  readonly scope: string;
  readonly key: string;
}

/** A forEach item with the key its dedupe.key renders for it (undefined: it acts without one). */
export interface KeyedItem extends ForEachItem {
  readonly key: string | undefined;
}

/** An endpoint's key: its Idempotency-Key header. */
export function endpointKey(endpoint: 'wake' | 'agent', headers: IncomingHttpHeaders): DedupeKey | undefined {
  const key = idempotencyKeyHeader(headers);
  return key === undefined ? undefined : { scope: endpoint, key };
}

/** A mapping's key: its dedupe.key, else its sender's delivery id, else the Idempotency-Key header. */
export function mappingKey(
  mapping: CompiledMapping,
  request: MappedRequest,
  payload: Record<string, unknown>,
): DedupeKey | undefined {
  const key = mapping.dedupeKey
    ? derivedKey(renderDedupeKey(mapping.dedupeKey, payload, request))
    : (derivedKey(mapping.verifier?.deliveryId(request.headers, payload)) ?? idempotencyKeyHeader(request.headers));
  return key === undefined ? undefined : { scope: mappingScope(mapping), key };
}

/** A forEach whose dedupe.key reads the item: each item with its own key. */
export function itemKeys(
  dedupeKey: Template,
  request: MappedRequest,
  payload: Record<string, unknown>,
  items: readonly ForEachItem[],
): KeyedItem[] {
  return items.map((entry) => ({
    item: entry.item,
    index: entry.index,
    key: derivedKey(renderDedupeKey(dedupeKey, payload, request, entry)),
  }));
}

export function mappingScope(mapping: CompiledMapping): string {
  return `mapping:${mapping.id}`;
}
