// POST <hooks.path>/wake: a system event for the main session, and a heartbeat when mode is now.
import { HookError } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import { formatErrors, validateWakePayload } from '../config/schemas.ts';
import { sanitizeMarkers } from '../safety/external-content.ts';

export type WakeMode = 'now' | 'next-heartbeat';

export interface WakeSpec {
  /** Safe to hand on: sanitized, or wrapped as untrusted content by a mapping. */
  text: string;
  mode: WakeMode;
  /** wake, or the mapping's name */
  hook: string;
}

export function parseWakePayload(payload: Record<string, unknown>): WakeSpec {
  if (!validateWakePayload(payload)) {
    throw new HookError(400, 'invalid_payload', formatErrors(validateWakePayload.errors).join('; '));
  }
  const p = payload as { text: string; mode?: WakeMode };
  // The text reaches the agent later inside a heartbeat prompt: it may not forge our content markers.
  return { text: sanitizeMarkers(p.text.trim()), mode: p.mode ?? 'now', hook: 'wake' };
}

export async function runWake(spec: WakeSpec, host: GatewayHost): Promise<{ ok: true; mode: WakeMode }> {
  const agentId = host.agents.defaultId;
  await host.sessions.enqueueSystemEvent(host.sessions.mainSessionKey(agentId), spec.text, {
    source: 'hook',
    hook: spec.hook,
  });
  if (spec.mode === 'now') host.sessions.requestHeartbeat({ agentId, reason: `hook:${spec.hook}` });
  return { ok: true, mode: spec.mode };
}
