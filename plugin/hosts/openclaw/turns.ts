// The service side of agent runs and deliveries: an isolated turn through api.runtime.subagent, a
// reply through a channel's outbound adapter. Called only from the service's context (run-queue.ts).
import type { Delivery, IsolatedTurn, TurnResult } from '../../host-kit.ts';
import type { AgentWaitResult, OpenClawRuntime } from './api.ts';

/** Extra time given to agent.wait beyond the run's own timeout; the core enforces the timeout itself. */
const WAIT_MARGIN_MS = 5_000;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Rejects when the signal aborts, so a wait never outlives the core's timeout or shutdown. */
function untilAborted(signal: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let onAbort: (() => void) | undefined;
  const promise = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(new Error(`aborted: ${String(signal.reason)}`));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => {});
  return { promise, dispose: () => onAbort && signal.removeEventListener('abort', onAbort) };
}

function toTurnResult(wait: AgentWaitResult): TurnResult {
  switch (wait.status) {
    case 'ok': {
      const reply = wait.terminalReply;
      return { status: 'ok', reply: reply?.disposition === 'visible' ? reply.text : '' };
    }
    case 'timeout':
    case 'pending':
      return { status: 'timeout', error: wait.error ?? 'the agent run did not finish in time' };
    default:
      return { status: 'error', error: wait.error ?? 'the agent run failed' };
  }
}

export async function runTurn(runtime: OpenClawRuntime, turn: IsolatedTurn): Promise<TurnResult> {
  const stop = untilAborted(turn.signal);
  try {
    // The core's runId keys the run, so a retried dispatch cannot start it twice.
    const started = await Promise.race([
      runtime.subagent.run({
        sessionKey: turn.sessionKey,
        message: turn.prompt,
        ...(turn.model ? { model: turn.model } : {}),
        deliver: false,
        idempotencyKey: `hookgate:${turn.runId}`,
      }),
      stop.promise,
    ]);
    const wait = await Promise.race([
      runtime.subagent.waitForRun({ runId: started.runId, timeoutMs: turn.timeoutMs + WAIT_MARGIN_MS }),
      stop.promise,
    ]);
    return toTurnResult(wait);
  } catch (err) {
    return { status: 'error', error: message(err) };
  } finally {
    stop.dispose();
  }
}

export async function deliverReply(runtime: OpenClawRuntime, config: unknown, d: Delivery): Promise<void> {
  if (!d.to) throw new Error(`no recipient for ${d.channel}: give "to" or talk to the agent on ${d.channel} first`);
  const outbound = runtime.channel?.outbound;
  if (!outbound) throw new Error('this OpenClaw has no channel outbound runtime');
  const adapter = await outbound.loadAdapter(d.channel);
  if (!adapter?.sendText) throw new Error(`channel ${d.channel} cannot send text (is its plugin enabled?)`);
  await adapter.sendText({ cfg: config, to: d.to, text: d.text });
}
