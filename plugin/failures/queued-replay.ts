// Replay with the queue on Redis (hooks.queue): the failure's state flips on Redis in one script
// (shared-failures.ts), then its action goes onto the queue under a new entry id, so whichever taker
// is free carries it out. Two instances replaying one failure at once start one run: the second is
// answered with the first one's run id (`duplicate: true`) unless asked `again`, as without a queue.
// Policies are checked where the replay is asked (the instance's own config), before the claim.
import { randomUUID } from 'node:crypto';
import { HookError, refuse } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import type { RefusedAction, ReplayWork } from '../queue/replay-work.ts';
import { runFailureId } from '../runs/run-final.ts';
import { failureReason } from './failure-reason.ts';
import type { Failure, FailureKind } from './failures.ts';
import type { RunActions } from './run-actions.ts';
import { prepareDeliveryReplay, prepareRunReplay, type BulkReplayAnswer, type ReplayAnswer } from './replay.ts';
import type { SharedAction, SharedFailures, SharedRecord } from './shared-failures.ts';

/** The door as a replay uses it (actions/queued-actions.ts's ActionDoor). */
export interface ReplayDoor {
  addReplay(hook: string, work: ReplayWork): Promise<void>;
  requeue(payload: string, runId: string): Promise<void>;
}

export interface QueuedReplayParts {
  host: GatewayHost;
  shared: SharedFailures;
  /** The runs that ended well here, kept for replay (this instance's only). */
  actions: RunActions;
  door: ReplayDoor;
  snapshot: () => RoutingPolicy;
  counted: (kind: FailureKind) => void;
}

/** A failure's action with today's policies applied, ready to queue. */
type Prepared = { work: ReplayWork; runId: string } | { payload: string; runId: string };

export class QueuedReplayer {
  constructor(private readonly parts: QueuedReplayParts) {}

  /** POST /api/failures/<id>/replay */
  async replayFailure(id: string, again: boolean): Promise<ReplayAnswer> {
    const { shared } = this.parts;
    const failure = await shared.get(id);
    const action = await shared.actionOf(id);
    if (!failure || !action) throw refuse.notFound('no such failure');
    const prepared = this.#prepare(action, failure);
    const earlier = await this.#claimAndQueue(failure, prepared, again);
    if (earlier !== undefined) return { ok: true, runId: earlier, replayOf: failure.runId, duplicate: true };
    return { ok: true, runId: prepared.runId, replayOf: failure.runId };
  }

  /**
   * Claims the failure for this replay and queues its work (the claim undone if the queue does not
   * take it); the earlier replay's run id when another claimed it first.
   */
  async #claimAndQueue(failure: Failure, work: Prepared, again: boolean): Promise<string | undefined> {
    const claim = await this.parts.shared.claimReplay(failure.id, work.runId, again);
    if (!claim.claimed) return claim.runId;
    try {
      await this.#queue(work, failure.hook);
    } catch (err) {
      await claim.undo().catch(() => {});
      throw err;
    }
    this.parts.counted(failure.kind);
    return undefined;
  }

  /** POST /api/runs/<runId>/replay: its failure (wherever it failed), else the run as kept here. */
  async replayRun(runId: string, again: boolean): Promise<ReplayAnswer> {
    const failure = await this.parts.shared.get(runFailureId(runId));
    if (failure) return this.replayFailure(failure.id, again);
    const { actions } = this.parts;
    const kept = actions.get(runId);
    if (!kept) {
      throw refuse.notFound(
        'no run with this id is kept for replay here: unknown, not finished yet, older than those kept, or it ended well on another instance',
      );
    }
    if (kept.replayedBy !== undefined && !again)
      return { ok: true, runId: kept.replayedBy, replayOf: runId, duplicate: true };
    const job = prepareRunReplay(kept.action, this.parts.host, this.parts.snapshot());
    await this.parts.door.addReplay(kept.action.hookId ?? kept.action.name, { kind: 'run', job });
    this.parts.counted('run');
    await actions.replayed(runId, job.runId).catch(() => {
      this.parts.host.logger.warn('a replay started but its record could not be written', { id: runId });
    });
    return { ok: true, runId: job.runId, replayOf: runId };
  }

  /**
   * POST /api/replay: every open failure last tried at or after `sinceMs` (of one hook if named).
   * Every policy is checked first (a refusal names its failure and replays nothing); then each is
   * claimed and queued in turn. A failure another instance claimed meanwhile is left to it.
   */
  async replayFailed(sinceMs: number, hook?: string): Promise<BulkReplayAnswer> {
    const { shared } = this.parts;
    const candidates = await shared.openSince(sinceMs, hook);
    const prepared: { failure: Failure; work: Prepared }[] = [];
    for (const failure of candidates) {
      const action = await shared.actionOf(failure.id);
      if (!action) continue;
      prepared.push({ failure, work: this.#prepareNaming(action, failure) });
    }
    const runIds: string[] = [];
    for (const { failure, work } of prepared) {
      // Claimed by another instance meanwhile: left to it.
      if ((await this.#claimAndQueue(failure, work, false)) === undefined) runIds.push(work.runId);
    }
    return { ok: true, replayed: runIds.length, runIds };
  }

  #prepare(action: SharedAction, failure: Failure): Prepared {
    // Its first run (or, with none, its entry) goes under the id the replay answers.
    if (action.kind === 'queued') return { payload: action.payload, runId: randomUUID() };
    if (action.kind === 'run') {
      const { kind: _kind, ...run } = action;
      const job = prepareRunReplay(run, this.parts.host, this.parts.snapshot());
      return { work: { kind: 'run', job }, runId: job.runId };
    }
    const delivery = prepareDeliveryReplay(action, failure.hook, this.parts.host);
    return { work: { kind: 'delivery', delivery }, runId: delivery.runId };
  }

  /** The bulk replay's refusal says which failure it was. */
  #prepareNaming(action: SharedAction, failure: Failure): Prepared {
    try {
      return this.#prepare(action, failure);
    } catch (err) {
      if (!(err instanceof HookError)) throw err;
      throw new HookError(err.status, err.code, `failure ${failure.id}: ${err.message}`, err.headers);
    }
  }

  /** Onto the queue, its 503s as they are. */
  async #queue(prepared: Prepared, hook: string): Promise<void> {
    if ('payload' in prepared) await this.parts.door.requeue(prepared.payload, prepared.runId);
    else await this.parts.door.addReplay(hook, prepared.work);
  }
}

/** An entry the door acknowledged and an assistant refused, as the shared book keeps it. */
export function refusedRecord(facts: RefusedAction): SharedRecord {
  const now = new Date().toISOString();
  const runId = facts.runId ?? randomUUID();
  const failure: Failure = {
    id: runFailureId(runId),
    kind: 'run',
    runId,
    ...(facts.requestId !== undefined ? { requestId: facts.requestId } : {}),
    hook: facts.hook,
    agentId: facts.agentId ?? 'main',
    attempts: 1,
    lastError: failureReason(`refused by the assistant (${facts.code}): ${facts.reason}`),
    firstAt: now,
    lastAt: now,
    state: 'open',
  };
  return { failure, action: { kind: 'queued', payload: facts.payload }, share: facts.hook };
}
