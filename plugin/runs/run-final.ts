// A run's final outcome, told to whoever follows runs after the 200 (the failure book, waiters):
// once per run, after its last try, with its reply's delivery accepted (or not asked for).
import type { AcceptedRun, DeliveryFact, RunAttempt } from '../host.ts';
import { createHash } from 'node:crypto';
import { randomHex } from '../util/random-hex.ts';

/** visible: a reply meant for a person; silent: empty or a heartbeat acknowledgement; none: no reply. */
export type ReplyKind = 'visible' | 'silent' | 'none';

export interface RunFinal {
  run: Readonly<AcceptedRun>;
  status: 'ok' | 'error' | 'timeout';
  reply: ReplyKind;
  /** Every try, the last included. */
  attempts: readonly RunAttempt[];
  /** Why it failed (one line), when it did. */
  error?: string;
  /**
   * With an error or a timeout: the id the failure book keeps it under. The run's summary names it,
   * and is the main session's one notice of the failure.
   */
  failureId?: string;
  /**
   * skipped: no delivery was asked for or there was nothing to deliver; else what the host reports,
   * possibly later (a host sending after acceptance settles it after the last attempt).
   */
  delivery: 'skipped' | DeliveryFact | Promise<DeliveryFact>;
  /** The model tokens its last try reported, when the host reports usage. */
  tokens?: number;
}

export type RunFinalListener = (final: RunFinal) => void;

/** A failure's id (`fail_` and 16 hex digits), for a failure of no run of its own (a dead letter). */
export function newFailureId(): string {
  return `fail_${randomHex(8)}`;
}

/**
 * The id of a run's failure, the same whenever that run fails: its summary names it before the
 * failure book keeps it, and a run ended again (handed back at a restart) is the same failure.
 */
export function runFailureId(runId: string): string {
  return `fail_${createHash('sha256').update(`run\u0000${runId}`).digest('hex').slice(0, 16)}`;
}
