// Requests waiting for their runs (waitForCompletion): each waited run is followed from its acceptance
// until RunService tells its final outcome and its delivery's fact is known. A follow outlives the
// request that asked for it (the kept dedupe answer becomes the final outcome when it ends), so the
// number followed is capped; a wait ends at its bound, when its client leaves, or at shutdown.
import type { ServerResponse } from 'node:http';
import type { AgentJob } from '../action.ts';
import type { DeliveryFact } from '../host.ts';
import type { ReplyKind, RunFinal } from './run-final.ts';

/** A run's final outcome as a waiting client is told it: never the reply's text. */
export interface RunOutcome {
  runId: string;
  status: 'ok' | 'error' | 'timeout';
  reply: ReplyKind;
  /** Present when the run was to deliver its reply. */
  delivery?: { channel: string; to?: string; status: DeliveryFact['status'] | 'skipped' };
}

/** What a wait learned of a run: its outcome, or that it is still going. */
export type WaitedRun = RunOutcome | { runId: string; status: 'running' };

/** The client a wait answers: its leaving ends the wait. */
export interface WaitingClient {
  readonly left: boolean;
  /** Calls fn when the client leaves; returns its cancel. */
  onLeave(fn: () => void): () => void;
}

/**
 * The client of an answer: it leaves when the connection closes, or when it closes its side (an
 * aborted request, a stopped curl). The gateway lets a half-closed client read its answer, so one
 * that only half-closed still gets what is known then (202 running).
 */
export function clientOf(res: ServerResponse): WaitingClient {
  const { socket } = res.req;
  return {
    get left() {
      return res.closed || res.destroyed || socket.readableEnded;
    },
    onLeave(fn) {
      res.once('close', fn);
      socket.once('end', fn);
      return () => {
        res.off('close', fn);
        socket.off('end', fn);
      };
    },
  };
}

/** One request's runs, their outcomes filled in as they end. */
export class FollowedRuns {
  readonly outcomes: (RunOutcome | undefined)[];
  #left: number;
  readonly #listeners = new Set<() => void>();

  constructor(readonly runIds: readonly string[]) {
    this.outcomes = runIds.map(() => undefined);
    this.#left = runIds.length;
  }

  get done(): boolean {
    return this.#left === 0;
  }

  /** Calls fn once every run has its outcome (at once when they have); returns its cancel. */
  whenDone(fn: () => void): () => void {
    if (this.done) {
      fn();
      return () => {};
    }
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** What is known now, in the runs' order. */
  known(): WaitedRun[] {
    return this.runIds.map((runId, i) => this.outcomes[i] ?? { runId, status: 'running' });
  }

  set(index: number, outcome: RunOutcome): void {
    if (this.outcomes[index]) return;
    this.outcomes[index] = outcome;
    if (--this.#left > 0) return;
    for (const fn of this.#listeners) fn();
    this.#listeners.clear();
  }
}

/** A followed run: where its outcome goes, and the delivery it was asked for (not the job: its prompt may be large). */
interface Followed {
  runs: FollowedRuns;
  index: number;
  runId: string;
  deliver: boolean;
  channel: string;
  to: string | undefined;
}

export class RunWaiters {
  readonly #byRun = new Map<string, Followed>();
  /** The ends of the waits under way, for stop(). */
  readonly #waits = new Set<() => void>();
  #stopped = false;

  /** `limit`: how many runs may be followed at once. */
  constructor(private readonly limit: () => number) {}

  /** Runs followed now. */
  get followed(): number {
    return this.#byRun.size;
  }

  /** Waits under way. */
  get waiting(): number {
    return this.#waits.size;
  }

  /** Follows the jobs' runs from now on; undefined when that would pass the limit (the request does not wait). */
  follow(jobs: readonly AgentJob[]): FollowedRuns | undefined {
    if (jobs.length === 0 || this.#byRun.size + jobs.length > this.limit()) return undefined;
    const runs = new FollowedRuns(jobs.map((j) => j.runId));
    jobs.forEach(({ runId, deliver, channel, to }, index) =>
      this.#byRun.set(runId, { runs, index, runId, deliver, channel, to }),
    );
    return runs;
  }

  /** Stops following runs that were never started (their request was refused). */
  forget(runs: FollowedRuns): void {
    for (const runId of runs.runIds) this.#byRun.delete(runId);
  }

  /** The followed runs one of these run ids belongs to, while any of them is still going. */
  of(runIds: readonly string[]): FollowedRuns | undefined {
    for (const runId of runIds) {
      const followed = this.#byRun.get(runId);
      if (followed) return followed.runs;
    }
    return undefined;
  }

  /** RunService's final outcome of a run; a delivery still under way is waited for first. */
  told(final: RunFinal): void {
    const followed = this.#byRun.get(final.run.runId);
    if (!followed) return;
    const { delivery } = final;
    if (delivery === 'skipped' || !('then' in delivery)) {
      this.#settle(followed, final, delivery);
      return;
    }
    delivery.then(
      (fact) => this.#settle(followed, final, fact),
      () => this.#settle(followed, final, 'refused'),
    );
  }

  #settle(followed: Followed, final: RunFinal, fact: DeliveryFact | 'skipped' | 'refused'): void {
    // Gone from the map and its outcome set in one turn: whoever looks finds one or the other.
    this.#byRun.delete(followed.runId);
    followed.runs.set(followed.index, outcomeOf(followed, final, fact));
  }

  /** What is known of the runs once they all ended, or after ms, or when the client leaves or stop() is called. */
  wait(runs: FollowedRuns, ms: number, client?: WaitingClient): Promise<WaitedRun[]> {
    if (runs.done || ms <= 0 || this.#stopped || client?.left) return Promise.resolve(runs.known());
    return new Promise((resolve) => {
      const end = (): void => {
        clearTimeout(timer);
        cancel();
        leave?.();
        this.#waits.delete(end);
        resolve(runs.known());
      };
      const timer = setTimeout(end, ms);
      const cancel = runs.whenDone(end);
      const leave = client?.onLeave(end);
      this.#waits.add(end);
    });
  }

  /** Ends every wait now and later ones at once (shutdown): each answers what is known. The runs stay followed. */
  stop(): void {
    this.#stopped = true;
    for (const end of [...this.#waits]) end();
  }
}

function outcomeOf(run: Followed, final: RunFinal, fact: DeliveryFact | 'skipped' | 'refused'): RunOutcome {
  const outcome: RunOutcome = { runId: run.runId, status: final.status, reply: final.reply };
  if (!run.deliver) return outcome;
  if (fact === 'skipped' || fact === 'refused') {
    const status = fact === 'refused' ? 'failed' : 'skipped';
    outcome.delivery = { channel: run.channel, ...(run.to ? { to: run.to } : {}), status };
  } else {
    outcome.delivery = { channel: fact.channel, ...(fact.to ? { to: fact.to } : {}), status: fact.status };
  }
  return outcome;
}
