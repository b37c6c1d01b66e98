// The deliver phase: a plan carried out once per idempotency key. A key seen before gets the first
// answer again (once the first request has one), a new key is claimed while the action is built and
// carried out, and a forEach whose key reads the item delivers each item once. Without a key a
// request simply acts.
import { refuse } from '../errors.ts';
import type { Logger } from '../host.ts';
import type { HooksSnapshot } from '../config/snapshot.ts';
import type { Action, Outcome } from './action.ts';
import type { ActionExecutor, ActionOrigin } from './execute.ts';
import { buildItemAction, buildMappedAction } from '../mappings/build-action.ts';
import type { TransformRunner } from '../transforms/index.ts';
import { actionTextBytes, checkActionBytes } from '../mappings/action-bytes.ts';
import { duplicateOf, type Claim, type DedupeKeys, type FirstAnswer, type Seen } from '../dedupe/dedupe-keys.ts';
import type { DedupeKey } from '../dedupe/idempotency.ts';
import type { SharedDedupe } from '../dedupe/shared-dedupe.ts';
import { bodyHashOf, type BodyHash } from '../dedupe/body-hash.ts';
import type { ActingPlan } from '../http/plan.ts';

/** A key's first answer, once its first request has one; 422 when that request had another body. */
async function firstOf(seen: Seen): Promise<FirstAnswer> {
  if ('reused' in seen) throw refuse.idempotencyKeyReused();
  return 'answer' in seen ? seen.answer : seen.pending;
}

/** The answer, whether it repeats an earlier one, and the key the plan was deduplicated by. */
export type Delivered = Outcome & { duplicate: boolean; key?: string; held?: boolean };

function repeatOf(first: FirstAnswer, key: string): Delivered {
  return { ...duplicateOf(first), duplicate: true, key };
}

export class Deliverer {
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
    if (seen) return { answer: await firstOf(seen) };
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
   * A key already answered here (or under way here), before any plan: its first answer, or the 422
   * of another body; undefined when the key is new here (the plan then runs, and deliver() claims
   * it, across instances too).
   */
  repeated(key: DedupeKey, hash: BodyHash): Promise<Delivered> | undefined {
    const seen = this.parts.dedupe.seen(key.scope, key.key, hash);
    if (!seen) return undefined;
    return firstOf(seen).then((first) => repeatOf(first, key.key));
  }

  /**
   * The plan acts once per key: a key seen before gets the first answer (once the first request
   * has one), a new one is claimed while its action runs. Without a key it simply acts. `body` is
   * the raw body, whose hash (`bodyHash`, when already taken) is kept beside the key.
   */
  async deliver(
    plan: ActingPlan,
    snap: HooksSnapshot,
    body: Buffer,
    requestId: string,
    bodyHash?: BodyHash,
  ): Promise<Delivered> {
    const origin = { hook: plan.kind === 'endpoint' ? plan.endpoint : plan.mapping.id, requestId };
    if (plan.kind === 'each') return this.#eachItemOnce(plan, snap, origin);
    const { key } = plan;
    const hash = key && (bodyHash ?? bodyHashOf(body));
    const acquired = key && (await this.#acquire(key.scope, key.key, hash, snap));
    if (acquired && 'answer' in acquired) return repeatOf(acquired.answer, key.key);
    const claim = acquired ? acquired.claim : undefined;
    try {
      const action = plan.kind === 'endpoint' ? plan.action : await this.#build(plan);
      const outcome = await this.parts.executor.execute(action, snap, key && { ...key, bodyHash: hash!.hex }, origin);
      claim?.settle(outcome.record!);
      return { status: outcome.status, body: outcome.body, duplicate: false, key: key?.key, held: outcome.held };
    } catch (err) {
      claim?.release(err);
      throw err;
    }
  }

  #build({ mapping, payload, request }: Extract<ActingPlan, { kind: 'mapped' }>): Promise<Action> {
    return buildMappedAction(mapping, payload, request, this.parts.transforms, this.parts.logger);
  }

  /**
   * A forEach whose dedupe.key reads the item: each item acts once, however often the request is
   * sent. Every item is built before any key is claimed, so a request whose items carry too much
   * text (or one whose item fails to build) does nothing at all; then the items are claimed and
   * carried out one at a time, as before (a claim is never held while waiting for another request's).
   * The answer gathers the items' first answers; it is a duplicate when every item was.
   */
  async #eachItemOnce(
    { mapping, request, payload, scope, items }: Extract<ActingPlan, { kind: 'each' }>,
    snap: HooksSnapshot,
    origin: ActionOrigin,
  ): Promise<Delivered> {
    const { executor, transforms, logger } = this.parts;
    const built: { key: string | undefined; action: Action }[] = [];
    let bytes = 0;
    for (const item of items) {
      const { key } = item;
      const action = await buildItemAction(mapping, payload, request, transforms, logger, item);
      bytes += actionTextBytes(action);
      checkActionBytes(mapping, bytes);
      built.push({ key, action });
    }
    const runIds: string[] = [];
    let wakes = 0;
    let mode: unknown;
    let duplicates = 0;
    let held = 0;
    let heldAs: unknown;
    for (const { key, action } of built) {
      const acquired = key === undefined ? undefined : await this.#acquire(scope, key, undefined, snap);
      let body: Record<string, unknown> | undefined;
      if (acquired && 'answer' in acquired) {
        duplicates++;
        body = acquired.answer.body;
      } else {
        const claim = acquired?.claim;
        try {
          const outcome = await executor.execute(action, snap, key === undefined ? undefined : { scope, key }, origin);
          claim?.settle(outcome.record!);
          body = outcome.body;
          if (outcome.held) held++;
        } catch (err) {
          claim?.release(err);
          throw err;
        }
      }
      if (body?.held === true) {
        // A duplicate answers with the request id its item was first held under.
        heldAs ??= body.requestId;
        continue;
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
    // Items held now or by an earlier request: the request is answered as held (one hook, one pause).
    if (heldAs !== undefined) {
      const body = { ok: true, held: true, requestId: held ? origin.requestId : heldAs, ...extra };
      return { status: 202, body, duplicate, held: held > 0 };
    }
    if (runIds.length) return { status: 202, body: { ok: true, runId: runIds[0], runIds, ...extra }, duplicate };
    if (wakes) return { status: 200, body: { ok: true, mode, count: wakes, ...extra }, duplicate };
    return { status: 204, duplicate };
  }
}
