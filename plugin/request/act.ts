// The act phase: a plan carried out once per idempotency key. A key seen before gets the first
// answer again (once the first request has one), a new key is claimed while the action is built and
// carried out, and a forEach whose key reads the item acts on each item once. Without a key a
// request simply acts.
import { refuse } from '../errors.ts';
import type { Logger } from '../host.ts';
import type { HooksSnapshot } from './snapshot.ts';
import type { Action, Outcome } from '../action.ts';
import type { ActionExecutor, ActionOrigin } from '../actions/execute.ts';
import { buildItemAction, buildMappedAction, renderDedupeKey } from '../mappings/build-action.ts';
import type { CoalesceAs } from '../actions/run-batches.ts';
import type { TransformRunner } from '../transforms/index.ts';
import { actionTextBytes, checkActionBytes } from '../mappings/action-bytes.ts';
import { duplicateOf, type Claim, type DedupeKeys, type FirstAnswer, type Seen } from '../dedupe/dedupe-keys.ts';
import type { DedupeKey } from './idempotency.ts';
import type { SharedDedupe } from '../dedupe/shared-dedupe.ts';
import type { BodyHash } from '../dedupe/body-hash.ts';
import type { ActingPlan } from './plan.ts';
import type { ServerResponse } from 'node:http';
import { clientOf, type FollowedRuns, type RunWaiters, type WaitedRun } from '../runs/waiters.ts';
import { WaitSlots } from '../runs/wait-slots.ts';
import { outcomesIn, runIdsOf, waitedAnswer } from '../runs/wait-answer.ts';

/** A key's first answer, once its first request has one; 422 when that request had another body. */
async function firstOf(seen: Seen): Promise<FirstAnswer> {
  if ('reused' in seen) throw refuse.idempotencyKeyReused();
  return 'answer' in seen ? seen.answer : seen.pending;
}

/** How long a waited request waited, and the status it learned (the runs', or 'running'). */
export interface Waited {
  ms: number;
  status: string;
}

/**
 * The answer, whether it repeats an earlier one, the key the plan was deduplicated by, and for a
 * request that waited for its runs, how long and what came of them.
 */
export type Acted = Outcome & {
  duplicate: boolean;
  key?: string;
  held?: boolean;
  digested?: boolean;
  coalesced?: boolean;
  waited?: Waited;
};

/** Whether the request waits for its runs: the /agent body's choice or the mapping's, never a transform's. */
function waitsFor(plan: ActingPlan): boolean {
  return plan.kind === 'endpoint' ? plan.action.waitForCompletion === true : plan.mapping.waitForCompletion === true;
}

function repeatOf(first: FirstAnswer, key: string): Acted {
  const { status, body } = duplicateOf(first);
  return { status, body, duplicate: true, key };
}

export class Actor {
  /** The waits requests hold now (hooks.maxWaitingRequests). */
  readonly #waits = new WaitSlots();

  constructor(
    private readonly parts: {
      dedupe: DedupeKeys;
      executor: ActionExecutor;
      transforms: TransformRunner;
      logger: Logger;
      /** Keys claimed across instances (hooks.sharedState); local keys are kept as well. */
      shared?: SharedDedupe;
      waiters: RunWaiters;
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
    wait: boolean,
  ): Promise<{ answer: FirstAnswer } | { claim: Claim }> {
    const { dedupe, shared } = this.parts;
    const seen = dedupe.seen(scope, key, hash);
    if (seen) return { answer: await firstOf(seen) };
    const local = dedupe.claim(scope, key, hash);
    if (!shared) return { claim: local };
    const across = await shared.claim(scope, key, hash, snap.dedupe);
    if (!across) return { claim: local };
    if ('answer' in across) {
      // A waited request's 202 becomes its final outcome on Redis: not kept here, asked again next time.
      if (wait && across.answer.status === 202) local.pass(across.answer);
      else local.settle(across.answer);
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
          amend(answer) {
            local.amend(answer);
            across.claim.amend(answer);
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
   * of another body; undefined when the key is new here (the plan then runs, and act() claims
   * it, across instances too).
   */
  repeated(key: DedupeKey, hash: BodyHash): Acted | undefined {
    const seen = this.parts.dedupe.seen(key.scope, key.key, hash);
    if (!seen) return undefined;
    if ('reused' in seen) throw refuse.idempotencyKeyReused();
    // A first answer still coming, or one whose runs a waiting request follows: whether this
    // request waits too is in its body, so the plan decides.
    if ('pending' in seen) return undefined;
    if (seen.answer.status === 202 && this.parts.waiters.of(runIdsOf(seen.answer.body))) return undefined;
    // Answered in this turn: a promise and its continuation would cost more than the rest of a duplicate.
    return repeatOf(seen.answer, key.key);
  }

  /**
   * The plan acts once per key: a key seen before gets the first answer (once the first request
   * has one), a new one is claimed while its action runs. Without a key it simply acts. `bodyHash`
   * is the raw body's, for a plan with a key, kept beside it (not the body: a parameter lives as
   * long as the call, and the body need not outlive its plan); `requestId` goes with the runs it
   * starts. A waited request (waitForCompletion) is answered once its runs ended, or what is known
   * when the wait ends (its client leaving ends it); its key's kept answer becomes the final one
   * when they end.
   */
  async act(
    plan: ActingPlan,
    snap: HooksSnapshot,
    requestId: string,
    res: ServerResponse | undefined,
    bodyHash: BodyHash | undefined,
    client: string,
  ): Promise<Acted> {
    // Past hooks.maxWaitingRequests (in all, or this client's), the request acts as one that did
    // not ask to wait: answered at once, its runs going on.
    const slot = waitsFor(plan) ? this.#waits.take(client, snap.maxWaitingRequests) : undefined;
    try {
      return await this.#act(plan, snap, requestId, res, bodyHash, slot !== undefined);
    } finally {
      slot?.();
    }
  }

  async #act(
    plan: ActingPlan,
    snap: HooksSnapshot,
    requestId: string,
    res: ServerResponse | undefined,
    bodyHash: BodyHash | undefined,
    wait: boolean,
  ): Promise<Acted> {
    const origin = { hook: plan.kind === 'endpoint' ? plan.endpoint : plan.mapping.id, requestId };
    if (plan.kind === 'each') return this.#eachItemOnce(plan, snap, origin, wait, res);
    const { key } = plan;
    const hash = key && bodyHash;
    const acquired = key && (await this.#acquire(key.scope, key.key, hash, snap, wait));
    if (acquired && 'answer' in acquired) {
      const { answer } = acquired;
      // A duplicate of a waited request whose runs are still followed waits too, within its own bound.
      const followed = wait && answer.status === 202 ? this.parts.waiters.of(runIdsOf(answer.body)) : undefined;
      if (!followed) return repeatOf(answer, key.key);
      const waited = await this.#wait(answer.body!, [followed], snap, res);
      return { ...waited, body: { ...waited.body, duplicate: true }, duplicate: true, key: key.key };
    }
    const claim = acquired ? acquired.claim : undefined;
    let outcome: Awaited<ReturnType<ActionExecutor['execute']>>;
    try {
      const action = plan.kind === 'endpoint' ? plan.action : await this.#build(plan);
      const dedupe = key && { ...key, bodyHash: hash!.hex };
      outcome = await this.parts.executor.execute(action, snap, dedupe, origin, wait, coalesceOf(plan));
      claim?.settle(outcome.record!);
    } catch (err) {
      claim?.release(err);
      throw err;
    }
    const { followed, record } = outcome;
    // A held, digested or coalesced action has no run of its own yet: its answer is that one, waited for or not.
    if (!wait || outcome.status !== 202 || outcome.held || outcome.digested || outcome.coalesced)
      return {
        status: outcome.status,
        body: outcome.body,
        duplicate: false,
        key: key?.key,
        held: outcome.held,
        digested: outcome.digested,
        coalesced: outcome.coalesced,
      };
    if (followed && claim) amendWhenDone(claim, record!.at, outcome.body!, followed);
    // Not followed (too many are): answered at once, as a wait that ended.
    const runs = followed ?? knownRuns(outcome.body);
    return { ...(await this.#wait(outcome.body!, [runs], snap, res)), duplicate: false, key: key?.key };
  }

  /** The waited answer: the runs' outcomes once all ended, else what is known when the wait ends. */
  async #wait(
    accepted: Record<string, unknown>,
    followed: readonly (FollowedRuns | RunOutcomeList)[],
    snap: HooksSnapshot,
    res: ServerResponse | undefined,
  ): Promise<Outcome & { waited: Waited }> {
    const started = performance.now();
    const { waiters } = this.parts;
    const client = res && clientOf(res);
    const lists = await Promise.all(
      followed.map((f) => (Array.isArray(f) ? f : waiters.wait(f, snap.maxWaitMs, client))),
    );
    const answer = waitedAnswer(accepted, lists.flat());
    const ms = Math.round(performance.now() - started);
    return { ...answer, waited: { ms, status: answer.body!.status as string } };
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
    wait: boolean,
    res: ServerResponse | undefined,
  ): Promise<Acted> {
    const { executor, transforms, logger, waiters } = this.parts;
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
    let digested = 0;
    /** What each item's runs are known by: followed, or told by a duplicate's kept answer. */
    const followed: (FollowedRuns | RunOutcomeList)[] = [];
    for (const { key, action } of built) {
      const acquired = key === undefined ? undefined : await this.#acquire(scope, key, undefined, snap, wait);
      let body: Record<string, unknown> | undefined;
      if (acquired && 'answer' in acquired) {
        duplicates++;
        body = acquired.answer.body;
        if (wait) followed.push(waiters.of(runIdsOf(body)) ?? knownRuns(body));
      } else {
        const claim = acquired?.claim;
        let outcome: Awaited<ReturnType<ActionExecutor['execute']>>;
        try {
          outcome = await executor.execute(action, snap, key === undefined ? undefined : { scope, key }, origin, wait);
          claim?.settle(outcome.record!);
          if (outcome.held) held++;
        } catch (err) {
          claim?.release(err);
          throw err;
        }
        body = outcome.body;
        if (outcome.followed) {
          followed.push(outcome.followed);
          if (claim) amendWhenDone(claim, outcome.record!.at, body!, outcome.followed);
        } else if (wait) followed.push(knownRuns(body));
      }
      if (body?.held === true) {
        // A duplicate answers with the request id its item was first held under.
        heldAs ??= body.requestId;
        continue;
      }
      if (body?.digested === true) digested++;
      else if (typeof body?.runId === 'string')
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
    if (runIds.length) {
      const accepted = { ok: true, runId: runIds[0], runIds, ...extra };
      if (!wait) return { status: 202, body: accepted, duplicate };
      return { ...(await this.#wait(accepted, followed, snap, res)), duplicate };
    }
    if (wakes) return { status: 200, body: { ok: true, mode, count: wakes, ...extra }, duplicate };
    // Every item past its budget: kept for the digest.
    if (digested) {
      const body = { ok: true, digested: true, requestId: origin.requestId, ...extra };
      return { status: 202, body, duplicate, digested: true };
    }
    return { status: 204, duplicate };
  }
}

/** A mapping's coalesce with its key rendered for this request (default: the hook, one batch at a time). */
function coalesceOf(plan: ActingPlan): CoalesceAs | undefined {
  if (plan.kind !== 'mapped' || !plan.mapping.coalesce) return undefined;
  const { seconds, maxItems, key } = plan.mapping.coalesce;
  return { seconds, maxItems, key: key ? renderDedupeKey(key, plan.payload, plan.request) : '' };
}

/** Runs known only by an answer: the outcomes it tells, the rest as still running (not followed here). */
type RunOutcomeList = WaitedRun[];

function knownRuns(body: Record<string, unknown> | undefined): RunOutcomeList {
  const told = outcomesIn(body);
  return runIdsOf(body).map((runId) => told.find((o) => o.runId === runId) ?? { runId, status: 'running' });
}

/** Once the runs end, the key's kept answer (the first request's, by its time) becomes the final one. */
function amendWhenDone(claim: Claim, at: number, accepted: Record<string, unknown>, followed: FollowedRuns): void {
  followed.whenDone(() => claim.amend({ at, ...waitedAnswer(accepted, followed.known()) }));
}
