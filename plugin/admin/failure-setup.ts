// The failure book and replay, set up for one plugin instance: the book follows every run's final
// outcome and every reply's dead letter, and the admin routes serve both. With the queue on Redis
// (hooks.queue) every failure recorded here is pushed to the book on Redis too, and the routes list,
// dismiss and replay that one (shared-failures.ts, queued-replay.ts): every instance shows the same.
import path from 'node:path';
import type { GatewayHost, IdempotencyRecord } from '../host.ts';
import type { HooksSnapshot } from '../request/snapshot.ts';
import type { RunService } from '../runs/run-service.ts';
import type { HookMetrics } from '../observe/metrics.ts';
import type { AdminRoute } from './admin-call.ts';
import { FailureBook, type Failure } from '../failures/failures.ts';
import type { ReplyQueue } from '../replies/reply-queue.ts';
import { RunActions } from '../failures/run-actions.ts';
import { Replayer } from '../failures/replay.ts';
import { failureRoutes } from './failure-routes.ts';
import { SharedFailures, shareOf, type QueueRecords } from '../failures/shared-failures.ts';
import { QueuedReplayer, refusedRecord, type ReplayDoor } from '../failures/queued-replay.ts';
import type { ReplayWork } from '../queue/replay-work.ts';

export interface Failures {
  route: AdminRoute;
  /** Open failures by hook (the overview): the shared book's with the queue (this one's while its Redis is away). */
  openByHook(): Map<string, number> | Promise<Map<string, number>>;
  /** Where a failure is looked up by id: the shared book with the queue, else this one. */
  lookup: { get(id: string): Failure | undefined | Promise<Failure | undefined> };
  /** With the queue: what a taker hands over (actions/queued-actions.ts's TakerOutlets). */
  outlets?: {
    replay(work: ReplayWork, record: IdempotencyRecord): Promise<void>;
    refused(facts: Parameters<typeof refusedRecord>[0]): Promise<void>;
  };
  close(): Promise<void>;
}

/** The queue on Redis, when hooks.queue is set: its records, and the door replays are queued at. */
export interface FailureQueue {
  records: QueueRecords;
  door: ReplayDoor;
}

export async function openFailures(
  host: GatewayHost,
  runs: RunService,
  replies: ReplyQueue,
  snapshot: () => HooksSnapshot,
  metrics: HookMetrics,
  queue?: FailureQueue,
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
  const counted = (kind: 'run' | 'delivery'): void => metrics.replay(kind);
  if (!queue) {
    const replay = new Replayer({ host, runs, replies, failures, actions, snapshot, counted });
    return {
      route: failureRoutes(failures, replay),
      openByHook: () => failures.openByHook(),
      lookup: failures,
      async close() {
        await failures.close();
        await actions.close();
      },
    };
  }
  const shared = await SharedFailures.open(
    queue.records,
    file('failures-outbox.jsonl'),
    host.logger,
    undefined,
    host.fileSync,
  );
  // The outbox keeps what Redis did not take: a failed write there is logged by its state file.
  failures.onRecord(
    (failure, action) => void shared.record({ failure, action, share: shareOf(failure, action) }).catch(() => {}),
  );
  const replay = new QueuedReplayer({ host, shared, actions, door: queue.door, snapshot, counted });
  return {
    route: failureRoutes(shared, replay),
    openByHook: () => shared.openByHook().catch(() => failures.openByHook()),
    lookup: shared,
    outlets: {
      async replay(work, record) {
        if (work.kind === 'run') await runs.submit([work.job], record);
        else await replies.add(work.delivery);
      },
      async refused(facts) {
        const record = refusedRecord(facts);
        metrics.failure('run');
        host.logger.warn('a queued action was refused here and is kept as a failure', {
          failure: record.failure.id,
          code: facts.code,
        });
        await shared.record(record);
      },
    },
    async close() {
      await shared.close();
      await failures.close();
      await actions.close();
    },
  };
}
