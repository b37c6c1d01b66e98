// The failure book and replay, set up for one plugin instance: the book follows every run's final
// outcome and every reply's dead letter, and the admin routes serve both.
import path from 'node:path';
import type { GatewayHost } from '../host.ts';
import type { HooksSnapshot } from '../request/snapshot.ts';
import type { RunService } from '../runs/run-service.ts';
import type { HookMetrics } from '../observe/metrics.ts';
import type { AdminRoute } from './admin-call.ts';
import { FailureBook } from '../failures/failures.ts';
import type { ReplyQueue } from '../replies/reply-queue.ts';
import { RunActions } from '../failures/run-actions.ts';
import { Replayer } from '../failures/replay.ts';
import { failureRoutes } from './failure-routes.ts';

export interface Failures {
  route: AdminRoute;
  book: FailureBook;
  close(): Promise<void>;
}

export async function openFailures(
  host: GatewayHost,
  runs: RunService,
  replies: ReplyQueue,
  snapshot: () => HooksSnapshot,
  metrics: HookMetrics,
): Promise<Failures> {
  const file = (name: string): string | undefined => host.stateDir && path.join(host.stateDir, name);
  const failures = await FailureBook.open(file('failures.jsonl'), host, (kind) => metrics.failure(kind));
  const actions = await RunActions.open(file('run-actions.jsonl'), host.logger, host.fileSync);
  runs.onFinal((final) => {
    if (final.status === 'ok') actions.keep(final.run);
    else failures.followRun(final);
  });
  // A reply out of tries goes to the book under the hook whose run produced it.
  replies.onDeadLetter((letter) => failures.record(letter));
  const replay = new Replayer({
    host,
    runs,
    replies,
    failures,
    actions,
    snapshot,
    counted: (kind) => metrics.replay(kind),
  });
  return {
    route: failureRoutes(failures, replay),
    book: failures,
    async close() {
      await failures.close();
      await actions.close();
    },
  };
}
