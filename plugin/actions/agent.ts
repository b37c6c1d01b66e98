// POST <hooks.path>/agent: validate the body, and turn any agent spec into a job with every routing
// policy applied.
import { randomUUID } from 'node:crypto';
import { refuse } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import { DEFAULTS } from '../settings/defaults.ts';
import { formatErrors, validateAgentPayload } from '../settings/schemas.ts';
import { wrapExternalContent } from '../safety/index.ts';
import { checkChannel, checkModel, resolveAgentId, resolveSessionKey, type RoutingPolicy } from '../runs/policies.ts';
import type { AgentJob, AgentSpec, RunOptions } from '../action.ts';

interface AgentPayload extends RunOptions {
  message: string;
  name?: string;
  agentId?: string;
  sessionKey?: string;
}

export function parseAgentPayload(payload: Record<string, unknown>): AgentSpec {
  if (!validateAgentPayload(payload)) {
    throw refuse.invalidPayload(formatErrors(validateAgentPayload.errors).join('; '));
  }
  // Field by field: a rest/spread copy of the body costs more than the checks on this path.
  const p = payload as unknown as AgentPayload;
  return {
    message: p.message,
    name: p.name,
    agentId: p.agentId,
    requestSessionKey: p.sessionKey,
    wakeMode: p.wakeMode,
    deliver: p.deliver,
    channel: p.channel,
    to: p.to,
    fallbackChannels: p.fallbackChannels,
    model: p.model,
    thinking: p.thinking,
    timeoutSeconds: p.timeoutSeconds,
    source: 'webhook',
  };
}

/** Applies every policy; throws the refusal of the first one that refuses. */
export function prepareAgentJob(spec: AgentSpec, snap: RoutingPolicy, host: GatewayHost): AgentJob {
  const agentId = resolveAgentId(spec.agentId, snap, host);
  const hookKey = resolveSessionKey(spec.requestSessionKey, spec.mappingSessionKey, snap);
  checkModel(spec.model, host);
  const deliver = spec.deliver ?? true;
  const channel = spec.channel ?? 'last';
  if (deliver) checkChannel(channel, host);
  const fallbacks = spec.fallbackChannels?.map((f) => (typeof f === 'string' ? { channel: f } : f));
  if (deliver) for (const f of fallbacks ?? []) checkChannel(f.channel, host);
  const name = spec.name?.trim() || 'agent';
  const message = spec.message.trim();
  return {
    runId: spec.runId ?? randomUUID(),
    name,
    agentId,
    sessionKey: `agent:${agentId}:${hookKey}`,
    prompt:
      spec.allowUnsafeExternalContent || spec.alreadyWrapped
        ? message
        : wrapExternalContent(message, { source: spec.source, hookName: name }),
    model: spec.model,
    thinking: spec.thinking,
    timeoutMs: Math.round((spec.timeoutSeconds ?? host.agents.timeoutSeconds ?? DEFAULTS.runTimeoutSeconds) * 1000),
    wakeMode: spec.wakeMode ?? 'now',
    deliver,
    channel,
    to: spec.to,
    ...(deliver && fallbacks?.length ? { fallbacks } : {}),
    // No key named anywhere: the run's session is its own, and may go once the run is long over.
    ...(spec.requestSessionKey === undefined &&
    spec.mappingSessionKey === undefined &&
    snap.defaultSessionKey === undefined
      ? { oneOffSession: true as const }
      : {}),
  };
}
