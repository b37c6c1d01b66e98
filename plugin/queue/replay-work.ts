// What a replay asked at any instance puts on the queue (hooks.queue), so whichever taker is free
// carries it out: the new run, its policies checked where the replay was asked, or the delivery
// again. Beside the queue, so both the failure book that adds it and the taker that reads it name it;
// and what a taker refused, which the failure book keeps to replay.
import type { AgentJob } from '../action.ts';
import type { Delivery } from '../host.ts';

export type ReplayWork =
  { kind: 'run'; job: AgentJob } | { kind: 'delivery'; delivery: Delivery & { hook: string; hookId?: string } };

/** What an entry an assistant refused (a HookError) was: what the failure book keeps of it to replay. */
export interface RefusedAction {
  payload: string;
  hook: string;
  requestId?: string;
  runId?: string;
  agentId?: string;
  code: string;
  reason: string;
}
