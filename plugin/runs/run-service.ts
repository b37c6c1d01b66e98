// Runs accepted agent jobs in the background: a bounded queue fair between hooks (hook-queues.ts), a
// concurrency limit in all and per hook, a timeout per run,
// tries again a run that failed in a way that may pass (hooks.retry, same runId), and posts one
// summary in the main session for every job, for its final outcome, whatever happens to it.
import { refuse } from '../errors.ts';
import type { GatewayHost, IdempotencyRecord, RunAttempt, RunRecord, RunStatus, TurnResult } from '../host.ts';
import type { AgentJob } from '../action.ts';
import { resolveRoute } from './policies.ts';
import { sanitizeMarkers } from '../safety/index.ts';
import { errorMessage } from '../util/errors.ts';
import { cachedRedactor } from '../util/secret-redactor.ts';
import { runFailureId, type ReplyKind, type RunFinal, type RunFinalListener } from './run-final.ts';
import { mayRetry, retryDelayMs, type RetryPolicy } from '../retry/retry-policy.ts';
import type { RunRetries } from './run-retries.ts';
import { NO_METRICS, type HookMetrics } from '../observe/metrics.ts';
import { ActiveRun } from './active-run.ts';
import type { ReplyQueue } from '../replies/reply-queue.ts';
import { HookQueues, type HookConcurrency } from './hook-queues.ts';

export interface RunLimits {
  maxConcurrentRuns: number;
  maxQueuedRuns: number;
  /** Each hook's own limit of runs at once, within maxConcurrentRuns: its id → the limit. */
  hookConcurrency: HookConcurrency;
  retry: Readonly<RetryPolicy>;
}

/** What a status update carries besides the status. */
type RunUpdate = Partial<Omit<RunRecord, 'runId' | 'name' | 'status' | 'agentId' | 'sessionKey'>>;
export type RunUpdateListener = (job: Readonly<AgentJob>, status: RunStatus, update: Readonly<RunUpdate>) => void;

const SUMMARY_MAX = 1000;
const REASON_MAX = 300;
/** Runs of whitespace, except the single spaces that would be replaced by themselves (most of them). */
const WHITESPACE_RUN = /\s{2,}|[^\S ]/g;
const HEARTBEAT_ACK = /^[\s*_`~]*HEARTBEAT_OK[\s*_`~.!]*$/i;
const SHUTDOWN = 'interrupted: the gateway shut down before the run finished';
const RESTARTED = 'interrupted: the gateway restarted before the run finished';
const RESTARTED_MID_TRY = 'interrupted: the gateway restarted during a retry, which is not tried again';

function isHeartbeatAck(reply: string): boolean {
  return HEARTBEAT_ACK.test(reply);
}

/** One line of at most max characters; only a bounded head of a long reply is looked at. */
function clip(text: string, max: number): string {
  const head = text.length > max * 4 ? text.slice(0, max * 4) : text;
  const one = head.replace(WHITESPACE_RUN, ' ').trim();
  return one.length > max || head !== text ? `${one.slice(0, max - 1)}…` : one;
}

function reasonOf(err: unknown): string {
  return clip(errorMessage(err), REASON_MAX) || 'unknown error';
}

/** ", after 3 attempts" for a run tried more than once; nothing for one try. */
function attemptsNote(tries: number): string {
  return tries > 1 ? `, after ${tries} attempts` : '';
}

function stoppedTaking(): Error {
  return new Error('the gateway is shutting down: the action stays on the queue');
}

/** A retry whose start could not be recorded is not tried: a crash during it could repeat it. */
function notStarted(err: unknown): TurnResult {
  return { status: 'error', error: `not tried again: the retry could not be recorded (${reasonOf(err)})` };
}

export class RunService {
  private readonly waiting = new HookQueues();
  private readonly active = new Map<string, ActiveRun>();
  private readonly settled = new Set<Promise<void>>();
  /** Jobs accepted but waiting for the host to record it: they hold their places in the queue. */
  private admitting = 0;
  private closing = false;
  /** Takers of queued actions waiting for room (whenRoomFor), oldest first. */
  private readonly roomWaiters: { runs: number; resolve: () => void; reject: (err: Error) => void }[] = [];
  /** The gateway stops: queued actions are left on the queue (stopTaking). */
  private takingStopped = false;
  private readonly finalListeners: RunFinalListener[] = [];
  private readonly updateListeners: RunUpdateListener[] = [];
  /** The host's credentials, masked in what its turns bring back (errors, replies). */
  private readonly redact = cachedRedactor(() => this.host.secrets?.() ?? []);

  constructor(
    private readonly host: GatewayHost,
    private readonly limits: () => RunLimits,
    /** Runs waiting for their next try, on disk when the host gives a stateDir. */
    private readonly retries: RunRetries,
    /** Where a run's reply goes: the core's reply queue. */
    private readonly replies: Pick<ReplyQueue, 'add'>,
    /** Told each status a run reaches and each retry scheduled. */
    private readonly metrics: Pick<HookMetrics, 'runStatus' | 'retryScheduled'> = NO_METRICS,
  ) {}

  /** Whether the run was in the retry schedule at start: this service finishes it, not the host. */
  tookBack(runId: string): boolean {
    return this.retries.tookBack(runId);
  }

  /** Told each run's final outcome, once (failures, waiters). */
  onFinal(listener: RunFinalListener): void {
    this.finalListeners.push(listener);
  }

  /** Told each status a run reaches, with what changed (the run book). */
  onUpdate(listener: RunUpdateListener): void {
    this.updateListeners.push(listener);
  }

  get queued(): number {
    return this.waiting.size;
  }

  get running(): number {
    return this.active.size;
  }

  /**
   * Resolves once `runs` more runs would not wait here for a slot (or nothing is here at all, for an
   * action with more runs than slots). An assistant takes a queued run only then: what it has not
   * started stays in the queue, for any taker, rather than waiting on this instance's disk.
   */
  whenRoomFor(runs: number): Promise<void> {
    if (this.takingStopped) return Promise.reject(stoppedTaking());
    if (this.hasRoomFor(runs)) return Promise.resolve();
    return new Promise((resolve, reject) => this.roomWaiters.push({ runs, resolve, reject }));
  }

  /**
   * Before the queue stops taking (index.ts close): a taker waiting for room, and any after, gets a
   * plain error (not a refusal), so its action stays on the queue for the next taker.
   */
  stopTaking(): void {
    this.takingStopped = true;
    for (const waiter of this.roomWaiters.splice(0)) waiter.reject(stoppedTaking());
  }

  private hasRoomFor(runs: number): boolean {
    const here = this.active.size + this.waiting.size + this.admitting;
    return here === 0 || here + runs <= this.limits().maxConcurrentRuns;
  }

  private wakeRoomWaiters(): void {
    while (this.roomWaiters.length && this.hasRoomFor(this.roomWaiters[0]!.runs)) this.roomWaiters.shift()!.resolve();
  }

  /**
   * Accepts every job or none (503 overloaded); never waits for the runs. Settles once the host has
   * recorded the acceptances (when onRunUpdate returns a promise for "queued"), and no job starts
   * before then: the 202 that follows is never for a run a crash could forget. If they cannot be
   * recorded, the jobs end as errors without running and the promise rejects.
   */
  async submit(jobs: readonly AgentJob[], idempotency?: IdempotencyRecord): Promise<void> {
    const { maxConcurrentRuns, maxQueuedRuns } = this.limits();
    if (this.closing) throw refuse.overloaded('the gateway is shutting down');
    const freeSlots = Math.max(0, maxConcurrentRuns - this.active.size);
    if (this.waiting.size + this.admitting + jobs.length > maxQueuedRuns + freeSlots) {
      throw refuse.overloaded('too many agent runs are waiting; try again later');
    }
    let recorded: Promise<void>[] | undefined;
    for (const job of jobs) {
      // Every run of the request carries its key: whichever acceptance is on disk, the key is too.
      const pending = this.report(job, 'queued', { ...(idempotency ? { idempotency } : {}), run: job });
      if (pending) (recorded ??= []).push(pending);
    }
    if (!recorded) {
      this.enqueue(jobs);
      return;
    }
    this.admitting += jobs.length;
    const admitted = Promise.all(recorded).then(
      () => {
        this.admitting -= jobs.length;
        this.enqueue(jobs);
      },
      (err: unknown) => {
        this.admitting -= jobs.length;
        this.wakeRoomWaiters();
        const error = `not started: the run could not be recorded (${reasonOf(err)})`;
        for (const job of jobs) void this.report(job, 'error', { error });
        throw refuse.internal('the run could not be recorded, so it was not started; try again');
      },
    );
    this.track(admitted.catch(() => {}));
    await admitted;
  }

  /**
   * Takes back runs an earlier process accepted (the host recorded them then): `rerun` ones queue
   * again whatever the limits, `interrupted` ones end at once as errors, with their summaries. The
   * retry schedule resumes: a run it holds is its own (the host's record of it is older), and one
   * whose retry a stop cut off ends as an error (the model may have acted on it).
   */
  resume(rerun: readonly AgentJob[], interrupted: readonly AgentJob[]): void {
    const notScheduled = (job: AgentJob): boolean => !this.retries.tookBack(job.runId);
    for (const job of interrupted.filter(notScheduled))
      this.track(this.finish(job, { status: 'error', error: RESTARTED }, []));
    const maxGapMs = this.limits().retry.initialDelaySeconds * 1000;
    for (const { run, attempts } of this.retries.resume((job) => this.dueAgain(job), maxGapMs)) {
      const cutOff: RunAttempt = { at: new Date().toISOString(), status: 'error', error: RESTARTED_MID_TRY };
      this.track(this.finish(run, { status: 'error', error: RESTARTED_MID_TRY }, [...attempts, cutOff]));
    }
    this.enqueue(rerun.filter(notScheduled));
  }

  /**
   * hooks.queue: a try that fell due in Redis, taken here: it runs under its run id with its tries
   * so far, as a try of this service's own schedule would (retried or finished as they say).
   */
  async retryTaken(job: AgentJob, attempts: readonly RunAttempt[]): Promise<void> {
    // Not a refusal (the queue drops those): left on the queue, it is taken again after the lease.
    if (this.closing || this.takingStopped) throw stoppedTaking();
    await this.retries.taken(job, attempts);
    this.dueAgain(job);
  }

  /** A retry falls due: it queues whatever maxQueuedRuns says (it was accepted long ago) and runs within maxConcurrentRuns. */
  private dueAgain(job: AgentJob): void {
    // Once closing it stays in the retry file for the next start.
    if (this.closing) return;
    this.waiting.push(job);
    this.pump();
  }

  /** Queues accepted jobs; once closing they end at once, as close() ends every waiting job. */
  private enqueue(jobs: readonly AgentJob[]): void {
    if (this.closing) {
      for (const job of jobs) this.track(this.finish(job, { status: 'error', error: SHUTDOWN }, []));
      return;
    }
    for (const job of jobs) this.waiting.push(job);
    this.pump();
  }

  /**
   * Lets running jobs finish for up to graceMs, then interrupts them; jobs never started are
   * interrupted too. Retries waiting for their next try stay on disk for the next start; kept in
   * memory only, they end now as errors.
   */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    this.stopTaking();
    this.retries.stop();
    for (const job of this.waiting.drain()) {
      // A due retry not yet started is one of the schedule's, ended below or left on disk.
      if (!this.retries.attemptsOf(job.runId)) this.track(this.finish(job, { status: 'error', error: SHUTDOWN }, []));
    }
    if (!this.retries.durable) {
      for (const { run, attempts } of this.retries.waiting())
        this.track(this.finish(run, { status: 'error', error: SHUTDOWN }, attempts));
    }
    const all = Promise.allSettled([...this.settled]);
    const timer = setTimeout(() => {
      for (const run of this.active.values()) run.stop({ status: 'error', error: SHUTDOWN }, SHUTDOWN);
    }, graceMs);
    await all;
    // Runs interrupted at the deadline finish right after the abort.
    await Promise.allSettled([...this.settled]);
    clearTimeout(timer);
    await this.retries.close();
  }

  private pump(): void {
    const { maxConcurrentRuns, hookConcurrency } = this.limits();
    while (this.active.size < maxConcurrentRuns) {
      const next = this.waiting.take(hookConcurrency);
      if (!next) return;
      this.track(this.execute(next));
    }
  }

  private track(p: Promise<void>): void {
    this.settled.add(p);
    void p.finally(() => this.settled.delete(p));
  }

  private async execute(job: AgentJob): Promise<void> {
    const run = new ActiveRun(job.timeoutMs);
    this.active.set(job.runId, run);
    let result: TurnResult;
    try {
      const attempts = this.retries.attemptsOf(job.runId);
      void this.report(job, 'running', attempts ? { attempts } : {});
      // A retry's start is on disk before the model is asked: a try cut off by a crash is never repeated.
      const started = attempts ? this.retries.starting(job.runId) : undefined;
      // turn() never rejects.
      void (started ? started.then(() => this.turn(job, run), notStarted) : this.turn(job, run)).then(run.end);
      result = await run.ended;
    } finally {
      run.settle();
      // The slot frees as soon as the run ends or times out, even if the host never settles.
      this.active.delete(job.runId);
      this.waiting.ended(job);
      if (!this.closing) this.pump();
      this.wakeRoomWaiters();
    }
    await this.afterTry(job, result);
  }

  /** A failure that may pass, with tries left, is scheduled again; anything else is the final outcome. */
  private async afterTry(job: AgentJob, result: TurnResult): Promise<void> {
    const earlier = this.retries.attemptsOf(job.runId);
    // The common case, a first try that is final, builds no attempt list here.
    if (!earlier && !(result.status === 'error' && result.retryable)) return this.finish(job, result, []);
    const attempt: RunAttempt = { at: new Date().toISOString(), status: result.status };
    if (result.error !== undefined) attempt.error = result.error;
    const attempts = [...(earlier ?? []), attempt];
    const policy = this.limits().retry;
    // Kept in memory only, a retry would not outlive the shutdown under way.
    const retry =
      result.status === 'error' &&
      result.retryable === true &&
      mayRetry(policy, attempts.length) &&
      (this.retries.durable || !this.closing);
    if (retry) {
      const dueAt = Date.now() + retryDelayMs(policy, attempts.length, result.retryAfterMs);
      try {
        await this.retries.schedule(job, attempts, dueAt);
        this.metrics.retryScheduled('run');
        const nextAttemptAt = new Date(dueAt).toISOString();
        // As the reply queue logs its retries: what and when, never the prompt or the reply.
        this.host.logger.warn('an agent run failed; trying again later', {
          runId: job.runId,
          hook: job.name,
          attempt: attempts.length,
          nextAttemptAt,
          reason: result.error,
        });
        void this.report(job, 'retrying', {
          ...(result.error ? { error: result.error } : {}),
          attempts,
          nextAttemptAt,
        });
        return;
      } catch (err) {
        this.host.logger.error('a retry could not be scheduled; the run ends', {
          runId: job.runId,
          reason: reasonOf(err),
        });
      }
    }
    await this.finish(job, result, attempts);
  }

  private async turn(job: AgentJob, run: ActiveRun): Promise<TurnResult> {
    try {
      const r = await this.host.runs.runIsolatedTurn({
        runId: job.runId,
        agentId: job.agentId,
        sessionKey: job.sessionKey,
        prompt: job.prompt,
        model: job.model,
        thinking: job.thinking,
        timeoutMs: job.timeoutMs,
        get signal() {
          return run.signal;
        },
      });
      if (r.status !== 'ok') {
        const failed: TurnResult = { status: r.status, error: clip(this.redact(r.error ?? r.status), REASON_MAX) };
        // Only an error may be retried: after a timeout the model may still be acting on the first try.
        if (r.status === 'error' && r.retryable === true) {
          failed.retryable = true;
          if (r.retryAfterMs !== undefined) failed.retryAfterMs = r.retryAfterMs;
        }
        return failed;
      }
      const ok: TurnResult = { status: 'ok', reply: typeof r.reply === 'string' ? this.redact(r.reply) : '' };
      // Told on as the count budgets read; anything else a host sent there is not passed on.
      const tokens = r.usage?.totalTokens;
      if (typeof tokens === 'number' && Number.isFinite(tokens) && tokens > 0) ok.usage = { totalTokens: tokens };
      return ok;
    } catch (err) {
      return { status: 'error', error: reasonOf(this.redact(errorMessage(err))) };
    }
  }

  /**
   * Queues the reply for delivery if asked, then posts the summary and wakes the main session if asked; a
   * retried run leaves the retry schedule once its final record is kept. Never throws.
   */
  private async finish(job: AgentJob, result: TurnResult, attempts: readonly RunAttempt[]): Promise<void> {
    let status = result.status;
    let error = result.error;
    const reply = result.reply;
    const replyKind: ReplyKind =
      status !== 'ok' ? 'none' : reply && !isHeartbeatAck(reply) && reply.trim() ? 'visible' : 'silent';
    let delivery: RunFinal['delivery'] = 'skipped';
    // No channel configured or available: the model answered and the reply has nowhere to go, which
    // is the run's outcome (ok, delivery skipped), not a failure.
    const text = status === 'ok' && job.deliver && reply && !isHeartbeatAck(reply) ? reply : undefined;
    const route = text === undefined ? undefined : resolveRoute(job.channel, job.to, job.agentId, this.host);
    if (text !== undefined && route) {
      try {
        const receipt = await this.replies.add({
          ...route,
          text,
          runId: job.runId,
          agentId: job.agentId,
          hook: job.name,
          ...(job.hookId !== undefined ? { hookId: job.hookId } : {}),
          ...(job.fallbacks?.length ? { fallbacks: job.fallbacks } : {}),
        });
        delivery = receipt.outcome;
      } catch (err) {
        status = 'error';
        error = `delivery failed: ${reasonOf(err)}`;
        // Refused by the host: not 'skipped', which says nothing was to be delivered.
        delivery = { channel: route.channel, ...(route.to ? { to: route.to } : {}), status: 'failed' };
      }
    }
    const tries: readonly RunAttempt[] = attempts.length
      ? attempts
      : [{ at: new Date().toISOString(), status, ...(error !== undefined ? { error } : {}) }];
    // A failed run's summary is the main session's one notice of its failure: it names the failure.
    const failureId = status === 'ok' ? undefined : runFailureId(job.runId);
    if (failureId !== undefined) {
      this.host.logger.warn('an agent run failed for good', {
        runId: job.runId,
        hook: job.name,
        attempts: tries.length,
        failureId,
        reason: error ?? status,
      });
    }
    // The reply may echo untrusted content into the main session: no forged markers there either.
    const summary = sanitizeMarkers(
      status === 'ok'
        ? `Hook ${job.name}: ${clip(reply ?? '', SUMMARY_MAX) || '(empty reply)'}`
        : `Hook ${job.name} (${status}): ${error ?? status} (failure ${failureId}${attemptsNote(tries.length)})`,
    );
    try {
      const main = this.host.sessions.mainSessionKey(job.agentId);
      await this.host.sessions.enqueueSystemEvent(main, summary, { source: 'hook', hook: job.name, runId: job.runId });
      if (job.wakeMode === 'now')
        this.host.sessions.requestHeartbeat({ agentId: job.agentId, reason: `hook:${job.name}` });
    } catch (err) {
      this.host.logger.error('posting a hook run summary failed', { runId: job.runId, reason: reasonOf(err) });
    }
    const retried = this.retries.attemptsOf(job.runId) !== undefined;
    const final = this.report(job, status, {
      ...(reply !== undefined ? { reply } : {}),
      ...(error !== undefined ? { error } : {}),
      ...(retried ? { attempts: tries } : {}),
    });
    // Listeners (a waiting request, the failure book) hear of the outcome once the host keeps it, so
    // GET /api/runs/<id> agrees with them; and the host keeps it before the schedule forgets the run,
    // so a restart never sees it as neither scheduled nor finished (report() logs a failure).
    await final?.catch(() => {});
    this.tellFinal({
      run: job,
      status,
      reply: replyKind,
      attempts: tries,
      ...(error !== undefined ? { error } : {}),
      ...(failureId !== undefined ? { failureId } : {}),
      delivery,
      ...(result.usage ? { tokens: result.usage.totalTokens } : {}),
    });
    if (!retried) return;
    await this.retries.done(job.runId).catch((err: unknown) =>
      this.host.logger.error('a finished retry could not be removed from the schedule', {
        runId: job.runId,
        reason: reasonOf(err),
      }),
    );
  }

  private tellFinal(final: RunFinal): void {
    for (const listener of this.finalListeners) {
      try {
        listener(final);
      } catch (err) {
        this.host.logger.error('a run outcome listener failed', { runId: final.run.runId, reason: reasonOf(err) });
      }
    }
  }

  /**
   * Tells the host; a promise when the host records the update and says when it has. A failure is
   * logged here, so callers that do not wait for the record need not handle it.
   */
  private report(job: AgentJob, status: RunStatus, update: RunUpdate = {}): Promise<void> | undefined {
    this.metrics.runStatus(status);
    for (const listener of this.updateListeners) listener(job, status, update);
    const notify = this.host.runs.onRunUpdate;
    if (!notify) return undefined;
    const record: RunRecord = {
      runId: job.runId,
      name: job.name,
      status,
      agentId: job.agentId,
      sessionKey: job.sessionKey,
      ...update,
    };
    const failed = (err: unknown): void =>
      this.host.logger.error('onRunUpdate failed', { runId: job.runId, status, reason: reasonOf(err) });
    try {
      const recorded = notify.call(this.host.runs, record);
      recorded?.catch(failed);
      return recorded ?? undefined;
    } catch (err) {
      failed(err);
      return undefined;
    }
  }
}
