// Replay: a failure's (or a kept run's) resolved action runs again as a new run, or its delivery is
// sent again, under today's policies (an agent, model or channel no longer allowed is refused with its
// usual code). A failure or run replayed once answers that first replay again (`duplicate: true`)
// unless asked `again`; two replays of one failure asked at the same moment start one run.
import { randomUUID } from 'node:crypto';
import { HookError, refuse } from '../errors.ts';
import type { Delivery, GatewayHost } from '../host.ts';
import type { AgentJob } from '../action.ts';
import type { RunService } from '../runs/run-service.ts';
import { checkChannel, checkModel, resolveAgentId, type RoutingPolicy } from '../runs/policies.ts';
import { errorMessage } from '../util/errors.ts';
import { failureReason } from './failure-reason.ts';
import type { DeliveryAction, Failure, FailureBook, FailureKind, RunAction, StoredAction } from './failures.ts';
import type { RunActions } from './run-actions.ts';
import type { ReplyQueue } from '../replies/reply-queue.ts';

export interface ReplayAnswer {
  ok: true;
  /** The new run (for a delivery: the new delivery's id). */
  runId: string;
  replayOf: string;
  duplicate?: true;
}

export interface BulkReplayAnswer {
  ok: true;
  replayed: number;
  runIds: string[];
}

export interface ReplayParts {
  host: GatewayHost;
  runs: Pick<RunService, 'submit'>;
  /** Where a replayed delivery goes. */
  replies: Pick<ReplyQueue, 'add'>;
  failures: FailureBook;
  actions: RunActions;
  snapshot: () => RoutingPolicy;
  /** Told each replay started (metrics). */
  counted: (kind: FailureKind) => void;
}

type Prepared = { kind: 'run'; job: AgentJob } | { kind: 'delivery'; delivery: Delivery & { hook: string } };

/**
 * A run's replay under today's agent, model and channel policies, as a new run (a new id); an agent
 * no longer known falls back to the default. Throws the refusal of the first that refuses.
 */
export function prepareRunReplay(
  { requestId: _request, ...action }: RunAction,
  host: GatewayHost,
  policy: RoutingPolicy,
): AgentJob {
  const agentId = resolveAgentId(action.agentId, policy, host);
  checkModel(action.model, host);
  if (action.deliver) checkChannel(action.channel, host);
  const prefix = `agent:${action.agentId}:`;
  const sessionKey =
    agentId === action.agentId || !action.sessionKey.startsWith(prefix)
      ? action.sessionKey
      : `agent:${agentId}:${action.sessionKey.slice(prefix.length)}`;
  return { ...action, runId: randomUUID(), agentId, sessionKey };
}

/** A delivery's replay, its channel still allowed, as a new delivery (a new id). */
export function prepareDeliveryReplay(
  action: DeliveryAction,
  hook: string,
  host: GatewayHost,
): Delivery & { hook: string; hookId?: string } {
  checkChannel(action.channel, host);
  const { agentId, channel, to, text, hookId } = action;
  return {
    channel,
    ...(to !== undefined ? { to } : {}),
    text,
    agentId,
    runId: randomUUID(),
    hook,
    ...(hookId !== undefined ? { hookId } : {}),
  };
}

export class Replayer {
  /** Replays under way, by failure id or run id: a second ask waits for the first. */
  readonly #inFlight = new Map<string, Promise<ReplayAnswer>>();

  constructor(private readonly parts: ReplayParts) {}

  /** POST /api/failures/<id>/replay */
  replayFailure(id: string, again: boolean): Promise<ReplayAnswer> {
    const { failures } = this.parts;
    const failure = failures.get(id);
    const action = failures.actionOf(id);
    if (!failure || !action) return Promise.reject(refuse.notFound('no such failure'));
    return this.#once(
      id,
      again,
      failure.runId,
      () => failures.get(id)?.replayedBy,
      async () => {
        const runId = await this.#start(this.#prepare(action, failure.hook));
        this.parts.counted(failure.kind);
        await failures.replayed(id, runId).catch(() => this.#markLost(id));
        return runId;
      },
    );
  }

  /** POST /api/runs/<runId>/replay: its failure if it failed, else the run as kept. */
  replayRun(runId: string, again: boolean): Promise<ReplayAnswer> {
    const failure = this.parts.failures.latestOfRun(runId);
    if (failure) return this.replayFailure(failure.id, again);
    const { actions } = this.parts;
    const kept = actions.get(runId);
    if (!kept) {
      return Promise.reject(
        refuse.notFound('no run with this id is kept for replay: unknown, not finished yet, or older than those kept'),
      );
    }
    return this.#once(
      runId,
      again,
      runId,
      () => actions.get(runId)?.replayedBy,
      async () => {
        const newRunId = await this.#start(this.#prepareRun(kept.action));
        this.parts.counted('run');
        await actions.replayed(runId, newRunId).catch(() => this.#markLost(runId));
        return newRunId;
      },
    );
  }

  /**
   * POST /api/replay: every open failure last tried at or after `sinceMs` (of one hook if named). Every
   * policy is checked first: a failure refused replays nothing, and the refusal names it.
   */
  async replayFailed(sinceMs: number, hook?: string): Promise<BulkReplayAnswer> {
    const { failures, runs } = this.parts;
    const candidates = failures.openSince(sinceMs, hook).filter((f) => !this.#inFlight.has(f.id));
    const prepared = candidates.map((f) => ({ failure: f, work: this.#prepareNaming(f) }));
    const work = (async (): Promise<Map<string, string>> => {
      const started = new Map<string, string>();
      const jobs = prepared.flatMap((p) => (p.work.kind === 'run' ? [p.work.job] : []));
      // All the runs or none (503 when the queue cannot take them).
      if (jobs.length) await runs.submit(jobs);
      for (const { failure, work } of prepared) {
        if (work.kind === 'run') started.set(failure.id, work.job.runId);
        else {
          try {
            started.set(failure.id, await this.#start(work));
          } catch {
            // The reason may quote the platform: the failure stays open for a later replay.
            this.parts.host.logger.warn('a replayed delivery was not accepted', { failure: failure.id });
            continue;
          }
        }
        this.parts.counted(failure.kind);
        await failures.replayed(failure.id, started.get(failure.id)!).catch(() => this.#markLost(failure.id));
      }
      return started;
    })();
    // #track handles their rejections: a single replay asked meanwhile waits for these.
    for (const { failure } of prepared) {
      void this.#track(
        failure.id,
        work.then((started) => {
          const runId = started.get(failure.id);
          if (runId === undefined) throw refuse.internal('the replay did not start');
          return { ok: true, runId, replayOf: failure.runId };
        }),
      );
    }
    const started = await work;
    return { ok: true, replayed: started.size, runIds: [...started.values()] };
  }

  async #once(
    key: string,
    again: boolean,
    replayOf: string,
    previous: () => string | undefined,
    start: () => Promise<string>,
  ): Promise<ReplayAnswer> {
    const pending = this.#inFlight.get(key);
    if (pending) {
      const first = await pending.catch(() => undefined);
      if (first && !again) return { ...first, duplicate: true };
    }
    const prior = previous();
    if (prior !== undefined && !again) return { ok: true, runId: prior, replayOf, duplicate: true };
    return this.#track(
      key,
      start().then((runId) => ({ ok: true, runId, replayOf })),
    );
  }

  #track(key: string, work: Promise<ReplayAnswer>): Promise<ReplayAnswer> {
    this.#inFlight.set(key, work);
    const done = (): void => {
      if (this.#inFlight.get(key) === work) this.#inFlight.delete(key);
    };
    work.then(done, done);
    return work;
  }

  #prepare(action: StoredAction, hook: string): Prepared {
    if (action.kind === 'run') {
      const { kind: _kind, ...run } = action;
      return this.#prepareRun(run);
    }
    return this.#prepareDelivery(action, hook);
  }

  /** The bulk replay's refusal says which failure it was. */
  #prepareNaming(failure: Failure): Prepared {
    try {
      return this.#prepare(this.parts.failures.actionOf(failure.id)!, failure.hook);
    } catch (err) {
      if (!(err instanceof HookError)) throw err;
      throw new HookError(err.status, err.code, `failure ${failure.id}: ${err.message}`, err.headers);
    }
  }

  #prepareRun(action: RunAction): Prepared {
    return { kind: 'run', job: prepareRunReplay(action, this.parts.host, this.parts.snapshot()) };
  }

  #prepareDelivery(action: DeliveryAction, hook: string): Prepared {
    return { kind: 'delivery', delivery: prepareDeliveryReplay(action, hook, this.parts.host) };
  }

  /** Starts the run (once the host recorded it) or queues the delivery; the new id. */
  async #start(prepared: Prepared): Promise<string> {
    if (prepared.kind === 'run') {
      await this.parts.runs.submit([prepared.job]);
      return prepared.job.runId;
    }
    try {
      await this.parts.replies.add(prepared.delivery);
    } catch (err) {
      throw refuse.internal(`the replayed delivery was not accepted: ${failureReason(errorMessage(err))}`);
    }
    return prepared.delivery.runId;
  }

  #markLost(id: string): void {
    this.parts.host.logger.warn('a replay started but its record could not be written', { id });
  }
}
