// The answer of a waited request, from its accepted answer and what the wait learned. One run:
// 200 { ok, runId, status, reply, delivery? } once it ended, else 202 { ok, runId, status: 'running' }.
// Several runs (a fan-out): runId and runIds as accepted, `runs` with each one's outcome in order and
// `status` for them all: 200 with 'error' when any ended in error, else 'timeout' when any timed out,
// else 'ok'; 202 with 'running' while any is still going.
import type { Outcome } from '../action.ts';
import type { RunOutcome, WaitedRun } from './waiters.ts';

const FINAL = new Set(['ok', 'error', 'timeout']);

export function waitedAnswer(accepted: Record<string, unknown>, waited: readonly WaitedRun[]): Outcome {
  const running = waited.some((w) => w.status === 'running');
  if (!Array.isArray(accepted.runIds) && waited.length === 1) {
    const [only] = waited;
    return running
      ? { status: 202, body: { ...accepted, status: 'running' } }
      : { status: 200, body: { ...accepted, ...only } };
  }
  const status = running
    ? 'running'
    : waited.some((w) => w.status === 'error')
      ? 'error'
      : waited.some((w) => w.status === 'timeout')
        ? 'timeout'
        : 'ok';
  return { status: running ? 202 : 200, body: { ...accepted, status, runs: waited } };
}

/** The run ids an accepted (or waited) answer names. */
export function runIdsOf(body: Record<string, unknown> | undefined): string[] {
  if (!body) return [];
  if (Array.isArray(body.runIds)) return body.runIds.filter((id): id is string => typeof id === 'string');
  return typeof body.runId === 'string' ? [body.runId] : [];
}

/** The outcomes a final answer (kept for a key whose wait ended) already tells. */
export function outcomesIn(body: Record<string, unknown> | undefined): RunOutcome[] {
  if (!body || !FINAL.has(body.status as string)) return [];
  if (Array.isArray(body.runs)) return (body.runs as RunOutcome[]).filter((r) => FINAL.has(r.status));
  const { runId, status, reply, delivery } = body as unknown as RunOutcome;
  return [{ runId, status, reply, ...(delivery ? { delivery } : {}) }];
}
