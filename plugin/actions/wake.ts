// POST <hooks.path>/wake: a system event for the main session, and a heartbeat when mode is now.
import { refuse } from '../errors.ts';
import type { GatewayHost, IdempotencyRecord } from '../host.ts';
import { formatErrors, validateWakePayload } from '../settings/schemas.ts';
import { sanitizeMarkers } from '../safety/index.ts';
import type { WakeMode, WakeSpec } from '../action.ts';

export function parseWakePayload(payload: Record<string, unknown>): WakeSpec {
  if (!validateWakePayload(payload)) throw refuse.invalidPayload(formatErrors(validateWakePayload.errors).join('; '));
  const p = payload as { text: string; mode?: WakeMode };
  // The text reaches the agent later inside a heartbeat prompt: it may not forge our content markers.
  return { text: sanitizeMarkers(p.text.trim()), mode: p.mode ?? 'now', hook: 'wake' };
}

/** Resolves once the host has accepted the event (durably, for a host that records it). */
export async function runWake(spec: WakeSpec, host: GatewayHost, idempotency?: IdempotencyRecord): Promise<void> {
  const agentId = host.agents.defaultId;
  const meta = idempotency
    ? { source: 'hook' as const, hook: spec.hook, idempotency }
    : { source: 'hook' as const, hook: spec.hook };
  await host.sessions.enqueueSystemEvent(host.sessions.mainSessionKey(agentId), spec.text, meta);
  if (spec.mode === 'now') host.sessions.requestHeartbeat({ agentId, reason: `hook:${spec.hook}` });
}
