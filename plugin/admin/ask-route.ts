// `POST failures/<id>/ask`: the owner asks the assistant about one failure (the console's "Ask the
// assistant"). One system event in the main session of the failure's agent names it (id, hook, kind,
// reason, attempts; never its payload), its markers neutralised as every event's are, and a heartbeat
// is requested so the assistant turns to it now.
import { refuse } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import type { Failure } from '../failures/failures.ts';
import { sanitizeMarkers } from '../safety/index.ts';
import type { AdminCall, AdminRoute } from './admin-call.ts';

/** Where the failure is read: this instance's book, or the one on the queue's Redis. */
export interface FailureLookup {
  get(id: string): Failure | undefined | Promise<Failure | undefined>;
}

export function askRoute(failures: FailureLookup, host: Pick<GatewayHost, 'sessions'>): AdminRoute {
  return (call: AdminCall) => {
    const { parts, method } = call;
    if (parts.length !== 3 || parts[0] !== 'failures' || parts[2] !== 'ask') return undefined;
    if (method !== 'POST') return Promise.reject(refuse.methodNotAllowed('POST', 'the assistant is asked with POST'));
    return (async () => {
      const failure = await failures.get(parts[1]!);
      if (!failure) throw refuse.notFound('no such failure');
      const n = failure.attempts;
      const what = failure.kind === 'run' ? 'agent run' : `delivery to ${failure.channel ?? 'a channel'}`;
      // The hook's name and the error may come from a sender: no forged markers either.
      const text = sanitizeMarkers(
        `The owner asks you to look at failure ${failure.id} (${failure.state}): hook ${failure.hook}, ` +
          `${what} ${failure.runId}, failed after ${n} attempt${n === 1 ? '' : 's'}, last at ${failure.lastAt}: ` +
          `${failure.lastError}. Explain what went wrong and what can be done; ` +
          `a replay (\`hookgate replay ${failure.id}\`) tries it again.`,
      );
      const { sessions } = host;
      await sessions.enqueueSystemEvent(sessions.mainSessionKey(failure.agentId), text, {
        source: 'hook',
        hook: failure.hook,
        runId: failure.runId,
      });
      sessions.requestHeartbeat({ agentId: failure.agentId, reason: `hook:${failure.hook}` });
      return { ok: true, failureId: failure.id };
    })();
  };
}
