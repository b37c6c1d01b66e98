// The latest hook runs of this process as the admin API lists them (`GET /api/runs`, the console's
// runs view, `hookgate runs`): status, hook, the request that started it, tries and the next one,
// what became of its reply and its delivery. The same in every host, from the run service's own
// updates; never the prompt or the reply's text (a host shows those on a run's own page, where it
// keeps them). Bounded: the oldest run is forgotten first. At start it takes the runs the host kept
// on disk (HostRuns.history), so a restart does not empty the list; their reply and delivery are not
// kept there and stay unknown.
import type { AcceptedRun, DeliveryFact, PastRun, RunAttempt, RunStatus } from '../host.ts';
import { runFailureId, type ReplyKind, type RunFinal } from './run-final.ts';

/** Runs remembered. */
export const RUN_BOOK_SIZE = 10_000;
export const RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'retrying', 'ok', 'error', 'timeout'];

export interface RunSummary {
  runId: string;
  /** wake, agent or the mapping's id that accepted it (its name when an older record lacks it). */
  hook: string;
  /** The run's name, as its summary and the reply queue show it. */
  name: string;
  status: RunStatus;
  agentId: string;
  sessionKey: string;
  /** The hook request that started it. */
  requestId?: string;
  /** When it was accepted, and when it last changed (ISO times). */
  at: string;
  updatedAt: string;
  attempts?: readonly RunAttempt[];
  nextAttemptAt?: string;
  error?: string;
  /** Once it ended: a reply to show (visible), a heartbeat acknowledgement or nothing (silent), none. */
  reply?: ReplyKind;
  /** A reply sent to a chat: pending until its last try is over, then what the host reported. */
  delivery?: { status: 'pending' } | DeliveryFact;
  /** Failure book id, when it failed. */
  failureId?: string;
}

export interface RunsQuery {
  status?: RunStatus;
  hook?: string;
}

interface Booked extends RunSummary {
  seq: number;
}

export class RunBook {
  readonly #runs = new Map<string, Booked>();
  #seq = 0;

  constructor(readonly size = RUN_BOOK_SIZE) {}

  /** The runs an earlier process left, oldest first, before any of this one's: the newest `size` are kept. */
  restore(past: readonly PastRun[]): void {
    for (const p of past.slice(Math.max(0, past.length - this.size))) {
      if (this.#runs.has(p.runId)) continue;
      const run: Booked = {
        seq: ++this.#seq,
        runId: p.runId,
        hook: p.hookId ?? p.name,
        name: p.name,
        status: p.status,
        agentId: p.agentId,
        sessionKey: p.sessionKey,
        at: p.at,
        updatedAt: p.updatedAt,
      };
      if (p.requestId !== undefined) run.requestId = p.requestId;
      if (p.attempts !== undefined) run.attempts = p.attempts;
      if (p.status === 'retrying' && p.nextAttemptAt !== undefined) run.nextAttemptAt = p.nextAttemptAt;
      if (p.error !== undefined) run.error = p.error;
      // A failed run's failure id is derived from its run id: the failure book keeps it under that.
      if (p.status === 'error' || p.status === 'timeout') run.failureId = runFailureId(p.runId);
      this.#runs.set(p.runId, run);
    }
    while (this.#runs.size > this.size) this.#runs.delete(this.#runs.keys().next().value!);
  }

  /** A status the run service reported. */
  note(
    job: Readonly<AcceptedRun>,
    status: RunStatus,
    update: { attempts?: readonly RunAttempt[]; nextAttemptAt?: string; error?: string },
  ): void {
    const now = new Date().toISOString();
    let run = this.#runs.get(job.runId);
    if (!run) {
      run = {
        seq: ++this.#seq,
        runId: job.runId,
        hook: job.hookId ?? job.name,
        name: job.name,
        status,
        agentId: job.agentId,
        sessionKey: job.sessionKey,
        at: now,
        updatedAt: now,
      };
      if (job.requestId !== undefined) run.requestId = job.requestId;
      this.#runs.set(job.runId, run);
      if (this.#runs.size > this.size) this.#runs.delete(this.#runs.keys().next().value!);
    }
    run.status = status;
    run.updatedAt = now;
    if (update.attempts !== undefined) run.attempts = update.attempts;
    if (status === 'retrying' && update.nextAttemptAt !== undefined) run.nextAttemptAt = update.nextAttemptAt;
    else delete run.nextAttemptAt;
    if (update.error !== undefined) run.error = update.error;
  }

  /** The run's end: its reply and delivery (settled later when the reply queue still tries it). */
  final(final: RunFinal): void {
    const run = this.#runs.get(final.run.runId);
    if (!run) return;
    run.reply = final.reply;
    if (final.failureId !== undefined) run.failureId = final.failureId;
    const { delivery } = final;
    if (delivery === 'skipped') return;
    if (!(delivery instanceof Promise)) {
      run.delivery = delivery;
      return;
    }
    run.delivery = { status: 'pending' };
    delivery.then(
      (fact) => {
        run.delivery = fact;
      },
      () => {},
    );
  }

  /** Runs remembered in this status now. */
  count(status: RunStatus): number {
    let n = 0;
    for (const run of this.#runs.values()) if (run.status === status) n++;
    return n;
  }

  get(runId: string): RunSummary | undefined {
    const run = this.#runs.get(runId);
    if (!run) return undefined;
    const { seq: _seq, ...summary } = run;
    return summary;
  }

  /** The newest `limit` runs passing the query, older than the cursor, oldest first; `before` when more. */
  list(query: RunsQuery, limit: number, before?: number): { runs: RunSummary[]; before?: string } {
    const found: Booked[] = [];
    let older = false;
    // Newest first: the map keeps acceptance order.
    const all = [...this.#runs.values()];
    for (let i = all.length - 1; i >= 0; i--) {
      const run = all[i]!;
      if (before !== undefined && run.seq >= before) continue;
      if (query.status !== undefined && run.status !== query.status) continue;
      if (query.hook !== undefined && run.hook !== query.hook) continue;
      if (found.length === limit) {
        older = true;
        break;
      }
      found.push(run);
    }
    found.reverse();
    const runs = found.map(({ seq: _seq, ...summary }) => summary);
    return older && found.length ? { runs, before: String(found[0]!.seq) } : { runs };
  }
}
