// The service side of agent runs and deliveries: an isolated turn through api.runtime.subagent, a
// reply through a channel's outbound adapter. Called only from the service's context (run-queue.ts).
import { randomUUID } from 'node:crypto';
import type { Delivery, IsolatedTurn, TurnResult } from '../../host.ts';
import type { AgentWaitResult, OpenClawRuntime } from './api.ts';
import { PLUGIN_ID } from './identity.ts';
import { classifyRunError } from './passing-failure.ts';
import { errorMessage } from '../../util/errors.ts';

/** Extra time given to agent.wait beyond the run's own timeout; the core enforces the timeout itself. */
const WAIT_MARGIN_MS = 5_000;
/** OpenClaw refuses runs while its gateway starts; they are asked for again, backing off up to this. */
const MAX_RETRY_MS = 5_000;
/** What OpenClaw answers while it starts or prepares a plugin replacement: worth asking again. */
const NOT_YET = /unavailable during gateway startup|during replacement preparation/;

function message(err: unknown): string {
  return errorMessage(err);
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

export function toTurnResult(wait: AgentWaitResult): TurnResult {
  switch (wait.status) {
    case 'ok': {
      const reply = wait.terminalReply;
      return { status: 'ok', reply: reply?.disposition === 'visible' ? reply.text : '' };
    }
    case 'timeout':
    case 'pending':
      return { status: 'timeout', error: wait.error ?? 'the agent run did not finish in time' };
    default: {
      // A provider that was overloaded, rate limited or unreachable: the core may try the run again.
      const { retryable, retryAfterMs } = classifyRunError(wait.error);
      return {
        status: 'error',
        error: wait.error ?? 'the agent run failed',
        ...(retryable ? { retryable } : {}),
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      };
    }
  }
}

/** subagent.run, asked again while OpenClaw is not ready for runs, until the run's own end. */
async function startRun(
  runtime: OpenClawRuntime,
  turn: IsolatedTurn,
  attempt: number,
  stop: Promise<never>,
): Promise<{ runId: string }> {
  const try1 = attempt <= 1;
  for (let retryMs = 250; ; retryMs = Math.min(retryMs * 2, MAX_RETRY_MS)) {
    try {
      // The core's runId (and the try) keys the run, so a dispatch asked again cannot start it twice;
      // a try after a failed one is a new run (OpenClaw answers a known key with its first result).
      return await Promise.race([
        runtime.subagent.run({
          sessionKey: turn.sessionKey,
          message: turn.prompt,
          ...(turn.model ? { model: turn.model } : {}),
          deliver: false,
          idempotencyKey: try1 ? `hookgate:${turn.runId}` : `hookgate:${turn.runId}:try-${attempt}`,
        }),
        stop,
      ]);
    } catch (err) {
      if (turn.signal.aborted || !NOT_YET.test(message(err))) throw err;
    }
    await Promise.race([new Promise((resolve) => setTimeout(resolve, retryMs)), stop]);
  }
}

/**
 * subagent.run takes no thinking level; OpenClaw's agent command reads the session's stored one, so
 * the run's session gets it first. A session made here is the plugin's, as one subagent.run makes
 * would be (only then may the plugin end it, see stopOpenClawRun).
 */
async function setThinking(runtime: OpenClawRuntime, turn: IsolatedTurn): Promise<void> {
  const session = runtime.agent?.session;
  if (!turn.thinking || !session?.patchSessionEntry) return;
  await session.patchSessionEntry({
    agentId: turn.agentId,
    sessionKey: turn.sessionKey,
    fallbackEntry: { sessionId: randomUUID(), updatedAt: Date.now(), pluginOwnerId: PLUGIN_ID },
    update: () => ({ thinkingLevel: turn.thinking }),
  });
}

/** Ends OpenClaw's run of a session: ending the session stops its model request (its transcript stays). */
function stopOpenClawRun(runtime: OpenClawRuntime, sessionKey: string, log: (reason: string) => void): void {
  runtime.subagent.deleteSession?.({ sessionKey, deleteTranscript: false }).catch((err: unknown) => log(message(err)));
}

/**
 * One isolated turn in OpenClaw. `accepted` is told once OpenClaw has taken the run (a restart must
 * not start it again). When the core gives up on the run at its timeout, OpenClaw's run is stopped too.
 */
export async function runTurn(
  runtime: OpenClawRuntime,
  turn: IsolatedTurn,
  /** Which try of the run this is (1 the first; hooks.retry makes more). */
  attempt: number,
  accepted: () => Promise<void>,
  /** Told why OpenClaw's run could not be stopped at the timeout. */
  notStopped: (reason: string) => void,
): Promise<TurnResult> {
  const stop = untilAborted(turn.signal);
  try {
    await setThinking(runtime, turn);
    const started = await startRun(runtime, turn, attempt, stop.promise);
    await accepted();
    const wait = await Promise.race([
      runtime.subagent.waitForRun({ runId: started.runId, timeoutMs: turn.timeoutMs + WAIT_MARGIN_MS }),
      stop.promise,
    ]);
    return toTurnResult(wait);
  } catch (err) {
    if (turn.signal.aborted && turn.signal.reason === 'timeout') stopOpenClawRun(runtime, turn.sessionKey, notStopped);
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
