// What a hook request is aimed at once its name is known (the endpoint, or the mappings that may own
// the name), and how its body is parsed. plan.ts takes it from there.
import { refuse } from '../errors.ts';
import type { HooksSnapshot } from './snapshot.ts';
import type { BodyFormat, CompiledMapping } from '../mappings/mapping.ts';
import { candidatesFor, pickMapping } from '../mappings/mapping-index.ts';
import type { Verifier } from '../verify/verifier.ts';
import type { AddressList } from '../http/address-list.ts';
import type { HookRateLimit } from '../auth/hook-rate-limit.ts';
import { parseJsonObject } from '../http/body.ts';
import { parseFormObject } from '../http/form-body.ts';
import { parseMultipartObject } from '../http/multipart-body.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../http/json-depth.ts';

/** What a request is aimed at once its name is known. */
export type Target =
  | { kind: 'wake' | 'agent'; maxBodyBytes: number; sources?: undefined; rateLimit: HookRateLimit | undefined }
  | {
      kind: 'mapped';
      /** The name's own source allowlist (its mappings share it), within hooks.allowedSources. */
      sources: AddressList | undefined;
      /** The name's rate limit (its mappings share it). */
      rateLimit: HookRateLimit | undefined;
      /** Empty when no mapping owns the name: 404 once the token is accepted. */
      candidates: readonly CompiledMapping[];
      maxBodyBytes: number;
      bodyFormat: BodyFormat;
      maxParts: number;
      /** A signed name's verifier: it admits the request instead of the hook token. */
      verifier: Verifier | undefined;
    };

/** The endpoint or the mappings the name may belong to; the payload picks among mappings later. */
export function targetOf(name: string, snap: HooksSnapshot): Target {
  if (name === 'wake' || name === 'agent')
    return { kind: name, maxBodyBytes: snap.maxBodyBytes, rateLimit: snap.endpointRateLimits[name] };
  const candidates = candidatesFor(name, snap.mappingIndex);
  let maxBodyBytes = 0;
  for (const m of candidates) maxBodyBytes = Math.max(maxBodyBytes, ownBodyLimit(m, snap));
  // Mappings with this very name decide how its body is read, how it is verified and what is checked
  // before the body (they agree on all of it); mappings for any name read JSON and check nothing.
  const named = candidates.find((m) => m.matchPath === name);
  return {
    kind: 'mapped',
    candidates,
    maxBodyBytes,
    bodyFormat: named?.bodyFormat ?? 'json',
    maxParts: named?.maxParts ?? 0,
    verifier: named?.verifier,
    sources: named?.allowedSources,
    rateLimit: named?.rateLimit,
  };
}

/** The body limit a mapping holds the payloads it owns to (plan.ts, once the payload has picked it). */
export function ownBodyLimit(mapping: CompiledMapping, snap: HooksSnapshot): number {
  return mapping.maxBodyBytes ?? snap.maxBodyBytes;
}

/** What a sender on this host posts to one of its hooks with, as the snapshot takes it. */
export interface LocalPost {
  /** <hooks.path>/<name> */
  path: string;
  /** The first hook token in force; undefined when none is configured. */
  token: string | undefined;
  /**
   * The body limit a payload with this `source` is held to: its endpoint's, or that of the mapping
   * that owns it; undefined when no mapping owns it (the request would get 404).
   */
  bodyLimit: number | undefined;
}

/** A sender on this host (a mailbox watcher, say) reads its hook here, by the rules its requests will meet. */
export function localPostOf(snap: HooksSnapshot, name: string, source?: string): LocalPost {
  const path = `${snap.path}/${name}`;
  const token = snap.credentials.hookTokens()[0];
  const target = targetOf(name, snap);
  if (target.kind !== 'mapped') return { path, token, bodyLimit: target.maxBodyBytes };
  const owner = pickMapping(target.candidates, {}, source === undefined ? {} : { source });
  return { path, token, bodyLimit: owner && ownBodyLimit(owner, snap) };
}

const MULTIPART = /^\s*multipart\//i;

/** The mapping of this name with a Meta handshake: the only one a GET may reach. */
export function metaHandshakeOf(target: Target): CompiledMapping | undefined {
  if (target.kind !== 'mapped') return undefined;
  return target.candidates.find((m) => m.handshake?.kind === 'meta');
}

/**
 * The payload: a JSON object, a form, or a multipart body for mappings that read one (its fields are
 * strings and file descriptions: nothing nests). Only a multipart body is read asynchronously (in
 * slices, letting other requests be answered between them).
 */
export function parsePayload(
  target: Target,
  body: Buffer,
  contentType?: string,
): Record<string, unknown> | Promise<Record<string, unknown>> {
  if (target.kind !== 'mapped') return parseJsonObject(body);
  const multipart = target.bodyFormat === 'multipart';
  if (multipart && MULTIPART.test(contentType ?? '')) return parseMultipartObject(body, contentType, target.maxParts);
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) {
    throw refuse.invalidPayload(`the body nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  if (multipart) return parseMultipartObject(body, contentType, target.maxParts);
  return target.bodyFormat === 'form' ? parseFormObject(body) : parseJsonObject(body);
}

/** A name the config knows: only these are logged or shown as they were sent. */
export function isKnownName(name: string, snap: HooksSnapshot): boolean {
  return name === 'wake' || name === 'agent' || snap.mappingIndex.byName.has(name);
}
