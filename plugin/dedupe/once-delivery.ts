// Each delivery acts once per idempotency key: a key seen before gets the first answer again (once
// the first request has one), a new key is claimed while its action is built and carried out, and a
// forEach whose key reads the item delivers each item once. Without a key a request simply acts.
import type { IncomingHttpHeaders } from 'node:http';
import { refuse } from '../errors.ts';
import type { Logger } from '../host.ts';
import type { HooksSnapshot } from '../config/snapshot.ts';
import type { Action, Outcome } from '../actions/action.ts';
import type { ActionExecutor } from '../actions/execute.ts';
import type { CompiledMapping } from '../mappings/mapping.ts';
import {
  buildItemAction,
  buildMappedAction,
  forEachItems,
  renderDedupeKey,
  type MappedRequest,
} from '../mappings/build-action.ts';
import type { TransformRunner } from '../transforms/index.ts';
import { actionTextBytes, checkActionBytes } from '../mappings/action-bytes.ts';
import { duplicateOf, type Claim, type DedupeKeys, type FirstAnswer } from './dedupe-keys.ts';
import type { SharedDedupe } from './shared-dedupe.ts';
import { derivedKey, idempotencyKeyHeader } from './idempotency.ts';
import { bodyHashOf, type BodyHash } from './body-hash.ts';

type DeliveryKind = 'wake' | 'agent' | 'mapped';

/** What is delivered: an endpoint's action, or a mapping with its payload (the action is built here). */
export interface Delivery {
  kind: DeliveryKind;
  headers: IncomingHttpHeaders;
  endpoint: Action | undefined;
  mapping: CompiledMapping | undefined;
  mapped: MappedRequest | undefined;
  payload: Record<string, unknown>;
}

/** The answer, whether it repeats an earlier one, and the key the delivery was deduplicated by. */
export type Delivered = Outcome & { duplicate: boolean; key?: string };

/**
 * The delivery's key, scoped by endpoint or mapping: the Idempotency-Key header for wake and agent;
 * for a mapping its dedupe.key, else its sender's delivery id, else the header.
 */
export function deliveryKey(
  kind: DeliveryKind,
  headers: IncomingHttpHeaders,
  mapping: CompiledMapping | undefined,
  mapped: MappedRequest | undefined,
  payload: Record<string, unknown>,
): { scope: string; key: string } | undefined {
  if (!mapping) {
    const key = idempotencyKeyHeader(headers);
    return key === undefined ? undefined : { scope: kind, key };
  }
  const key = mapping.dedupeKey
    ? derivedKey(renderDedupeKey(mapping.dedupeKey, payload, mapped!))
    : (derivedKey(mapping.verifier?.deliveryId(headers, payload)) ?? idempotencyKeyHeader(headers));
  return key === undefined ? undefined : { scope: `mapping:${mapping.id}`, key };
}

/** The keys a delivery would be deduplicated by: one, one per forEach item when the key reads the item, or none. */
export function deliveryKeys({ kind, headers, mapping, mapped, payload }: Delivery): { scope: string; key: string }[] {
  if (mapping?.forEach && mapping.dedupeKey?.perItem) {
    const keys: { scope: string; key: string }[] = [];
    for (const item of forEachItems(mapping, payload)!) {
      const key = derivedKey(renderDedupeKey(mapping.dedupeKey, payload, mapped!, item));
      if (key !== undefined) keys.push({ scope: `mapping:${mapping.id}`, key });
    }
    return keys;
  }
  const key = deliveryKey(kind, headers, mapping, mapped, payload);
  return key ? [key] : [];
}

export class OnceDelivery {
  constructor(
    private readonly parts: {
      dedupe: DedupeKeys;
      executor: ActionExecutor;
      transforms: TransformRunner;
      logger: Logger;
      /** Keys claimed across instances (hooks.sharedState); local keys are kept as well. */
      shared?: SharedDedupe;
    },
  ) {}

  /**
   * The first answer for a key seen before (here, or on another instance), else the key claimed: a
   * local claim that other requests here wait on, and the key across instances when Redis answers.
   * Throws 422 when the key's first request had another body (`hash`: none for a forEach item's
   * key, whose requests differ by design), 409 when another instance holds it past the wait.
   */
  async #acquire(
    scope: string,
    key: string,
    hash: BodyHash | undefined,
    snap: HooksSnapshot,
  ): Promise<{ answer: FirstAnswer } | { claim: Claim }> {
    const { dedupe, shared } = this.parts;
    const seen = dedupe.seen(scope, key, hash);
    if (seen) {
      if ('reused' in seen) throw refuse.idempotencyKeyReused();
      return { answer: 'answer' in seen ? seen.answer : await seen.pending };
    }
    const local = dedupe.claim(scope, key, hash);
    if (!shared) return { claim: local };
    const across = await shared.claim(scope, key, hash, snap.dedupe);
    if (!across) return { claim: local };
    if ('answer' in across) {
      local.settle(across.answer);
      return across;
    }
    if ('claim' in across) {
      return {
        claim: {
          settle(answer) {
            local.settle(answer);
            across.claim.settle(answer);
          },
          release(failure) {
            local.release(failure);
            across.claim.release();
          },
        },
      };
    }
    // Requests here waiting on the local claim get the same refusal.
    const refusal =
      'reused' in across
        ? refuse.idempotencyKeyReused()
        : 'busy' in across
          ? refuse.idempotencyKeyInFlight()
          : refuse.internal('the shared record of this idempotency key is unreadable; the request was not processed');
    local.release(refusal);
    throw refusal;
  }

  /**
   * The delivery acts once per key: a key seen before gets the first answer (once the first request
   * has one), a new one is claimed while its action runs. Without a key it simply acts. `body` is
   * the raw body, whose hash is kept beside the key.
   */
  async deliver(
    { kind, headers, endpoint, mapping, mapped, payload }: Delivery,
    snap: HooksSnapshot,
    body: Buffer,
  ): Promise<Delivered> {
    // A forEach whose key reads the item: each item is a delivery of its own.
    if (mapping?.forEach && mapping.dedupeKey?.perItem) return this.#eachItemOnce(mapping, mapped!, payload, snap);
    const key = deliveryKey(kind, headers, mapping, mapped, payload);
    const hash = key && bodyHashOf(body);
    const acquired = key && (await this.#acquire(key.scope, key.key, hash, snap));
    if (acquired && 'answer' in acquired) return { ...duplicateOf(acquired.answer), duplicate: true, key: key.key };
    const claim = acquired ? acquired.claim : undefined;
    try {
      const action =
        endpoint ?? (await buildMappedAction(mapping!, payload, mapped!, this.parts.transforms, this.parts.logger));
      const outcome = await this.parts.executor.execute(action, snap, key && { ...key, bodyHash: hash!.hex });
      claim?.settle(outcome.record!);
      return { status: outcome.status, body: outcome.body, duplicate: false, key: key?.key };
    } catch (err) {
      claim?.release(err);
      throw err;
    }
  }

  /**
   * A forEach whose dedupe.key reads the item: each item acts once, however often the request is
   * sent. Every item is built before any key is claimed, so a request whose items carry too much
   * text (or one whose item fails to build) does nothing at all; then the items are claimed and
   * carried out one at a time, as before (a claim is never held while waiting for another request's).
   * The answer gathers the items' first answers; it is a duplicate when every item was.
   */
  async #eachItemOnce(
    mapping: CompiledMapping,
    mapped: MappedRequest,
    payload: Record<string, unknown>,
    snap: HooksSnapshot,
  ): Promise<Delivered> {
    const scope = `mapping:${mapping.id}`;
    const { executor, transforms, logger } = this.parts;
    const built: { key: string | undefined; action: Action }[] = [];
    let bytes = 0;
    for (const item of forEachItems(mapping, payload)!) {
      const key = derivedKey(renderDedupeKey(mapping.dedupeKey!, payload, mapped, item));
      const action = await buildItemAction(mapping, payload, mapped, transforms, logger, item);
      bytes += actionTextBytes(action);
      checkActionBytes(mapping, bytes);
      built.push({ key, action });
    }
    const runIds: string[] = [];
    let wakes = 0;
    let mode: unknown;
    let duplicates = 0;
    for (const { key, action } of built) {
      const acquired = key === undefined ? undefined : await this.#acquire(scope, key, undefined, snap);
      let body: Record<string, unknown> | undefined;
      if (acquired && 'answer' in acquired) {
        duplicates++;
        body = acquired.answer.body;
      } else {
        const claim = acquired?.claim;
        try {
          const outcome = await executor.execute(action, snap, key === undefined ? undefined : { scope, key });
          claim?.settle(outcome.record!);
          body = outcome.body;
        } catch (err) {
          claim?.release(err);
          throw err;
        }
      }
      if (typeof body?.runId === 'string')
        runIds.push(...(Array.isArray(body.runIds) ? (body.runIds as string[]) : [body.runId]));
      else if (body?.mode !== undefined) {
        wakes++;
        mode ??= body.mode;
      }
    }
    const duplicate = built.length > 0 && duplicates === built.length;
    const extra = {
      ...(duplicate ? { duplicate: true } : {}),
      ...(duplicates > 0 && !duplicate ? { duplicates } : {}),
    };
    if (runIds.length) return { status: 202, body: { ok: true, runId: runIds[0], runIds, ...extra }, duplicate };
    if (wakes) return { status: 200, body: { ok: true, mode, count: wakes, ...extra }, duplicate };
    return { status: 204, duplicate };
  }
}
