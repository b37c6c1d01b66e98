// The latest hook runs of this OpenClaw process as GET /hookgate/api/runs/<id> shows them: status,
// attempts and the next try, and the reply's deliveries in order (a fallback chain: each channel
// tried, naming the one it replaces), never the reply's text. OpenClaw keeps its own transcripts and
// has no outbox; this is only the plugin's view, bounded and in memory. It is the reply queue's
// history (host.ts, ReplyHistory), which hears every delivery and each change of its state.
import type { ReplyEntry, ReplyHistory, ReplyState, RunAttempt, RunRecord, RunStatus } from '../../host.ts';

/** Runs remembered; the oldest is forgotten first. */
export const RECENT_RUNS = 1000;

export interface RunView {
  runId: string;
  name: string;
  status: RunStatus;
  agentId: string;
  sessionKey: string;
  updatedAt: string;
  error?: string;
  attempts?: readonly RunAttempt[];
  nextAttemptAt?: string;
}

/** One delivery of a run's reply: where it went and what became of it, without its text. */
export interface DeliveryView {
  id?: string;
  channel: string;
  to?: string;
  at: string;
  status: ReplyState['status'] | 'recorded';
  /** The delivery this one replaces (a fallback's). */
  fallbackOf?: string;
  attempts?: ReplyState['attempts'];
  error?: string;
  nextAttemptAt?: string;
}

export class RecentRuns implements ReplyHistory {
  private readonly runs = new Map<string, RunView>();
  /** By run id, in the order they were added; as many runs as `runs` keeps. */
  private readonly deliveries = new Map<string, DeliveryView[]>();

  constructor(private readonly size = RECENT_RUNS) {}

  note(record: Readonly<RunRecord>): void {
    const view: RunView = {
      runId: record.runId,
      name: record.name,
      status: record.status,
      agentId: record.agentId,
      sessionKey: record.sessionKey,
      updatedAt: new Date().toISOString(),
      ...(record.error !== undefined ? { error: record.error } : {}),
      ...(record.attempts ? { attempts: record.attempts } : {}),
      ...(record.nextAttemptAt ? { nextAttemptAt: record.nextAttemptAt } : {}),
    };
    // Re-inserted: the map's order is the order of last change, the oldest first.
    this.runs.delete(record.runId);
    this.runs.set(record.runId, view);
    if (this.runs.size > this.size) this.runs.delete(this.runs.keys().next().value!);
  }

  find(runId: string): RunView | undefined {
    return this.runs.get(runId);
  }

  /** The run's deliveries in order, the first channel first. */
  deliveriesOf(runId: string): readonly DeliveryView[] {
    return this.deliveries.get(runId) ?? [];
  }

  added(entry: ReplyEntry): Promise<void> {
    let list = this.deliveries.get(entry.runId);
    if (!list) {
      this.deliveries.set(entry.runId, (list = []));
      if (this.deliveries.size > this.size) this.deliveries.delete(this.deliveries.keys().next().value!);
    }
    list.push({
      ...(entry.id !== undefined ? { id: entry.id } : {}),
      channel: entry.channel,
      ...(entry.to !== undefined ? { to: entry.to } : {}),
      at: entry.at,
      status: entry.status,
      ...(entry.fallbackOf !== undefined ? { fallbackOf: entry.fallbackOf } : {}),
    });
    return Promise.resolve();
  }

  // Progress alone (`moved` false) changes nothing shown here but what state carries.
  changed(entry: ReplyEntry & { id: string }, state: ReplyState, _moved?: boolean): Promise<void> {
    const view = this.deliveries.get(entry.runId)?.find((d) => d.id === entry.id);
    if (view) {
      view.status = state.status;
      if (state.attempts) view.attempts = state.attempts;
      if (state.error !== undefined) view.error = state.error;
      if (state.nextAttemptAt !== undefined) view.nextAttemptAt = state.nextAttemptAt;
      else delete view.nextAttemptAt;
    }
    return Promise.resolve();
  }
}
