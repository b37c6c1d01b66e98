// The latest hook runs of this OpenClaw process as GET /hookgate/api/runs/<id> shows them: status,
// attempts and the next try, never the reply's text. OpenClaw keeps its own transcripts; this is
// only the plugin's view, bounded and in memory.
import type { RunAttempt, RunRecord, RunStatus } from '../../host.ts';

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

export class RecentRuns {
  private readonly runs = new Map<string, RunView>();

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
}
