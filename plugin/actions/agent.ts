// POST <hooks.path>/agent: validate, apply the routing policies, and hand a job to the run service.
import { randomUUID } from 'node:crypto';
import { HookError } from '../errors.ts';
import type { ChannelName, GatewayHost, IsolatedTurn } from '../host.ts';
import type { HooksSnapshot } from '../config/resolve.ts';
import { formatErrors, validateAgentPayload } from '../config/schemas.ts';
import { wrapExternalContent } from '../safety/external-content.ts';
import { checkChannel, checkModel, resolveAgentId, resolveSessionKey } from './policies.ts';
import type { WakeMode } from './wake.ts';

const DEFAULT_TIMEOUT_SECONDS = 600;

/** How a run goes: what an /agent body, a mapping and a transform may each say. */
export interface RunOptions {
  wakeMode?: WakeMode;
  deliver?: boolean;
  channel?: 'last' | ChannelName;
  to?: string;
  model?: string;
  thinking?: string;
  timeoutSeconds?: number;
}

/** What an agent action asks for, from a request body, a mapping or the gmail preset. */
export interface AgentSpec extends RunOptions {
  message: string;
  name?: string;
  agentId?: string;
  /** sessionKey from the request body: subject to hooks.allowRequestSessionKey. */
  requestSessionKey?: string;
  /** sessionKey from a mapping: subject only to the prefixes. */
  mappingSessionKey?: string;
  /** Only a mapping can set this; a request body never can. */
  allowUnsafeExternalContent?: boolean;
  /** The message is already wrapped (the gmail preset wraps it as email). */
  alreadyWrapped?: boolean;
  source: string;
}

/** An accepted run: the turn the host will be asked for (less its abort signal), and what follows it. */
export interface AgentJob extends Omit<IsolatedTurn, 'signal'> {
  name: string;
  wakeMode: WakeMode;
  deliver: boolean;
  channel: 'last' | ChannelName;
  to?: string;
}

interface AgentPayload extends RunOptions {
  message: string;
  name?: string;
  agentId?: string;
  sessionKey?: string;
}

export function parseAgentPayload(payload: Record<string, unknown>): AgentSpec {
  if (!validateAgentPayload(payload)) {
    throw new HookError(400, 'invalid_payload', formatErrors(validateAgentPayload.errors).join('; '));
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
    model: p.model,
    thinking: p.thinking,
    timeoutSeconds: p.timeoutSeconds,
    source: 'webhook',
  };
}

/** Applies every policy; throws the HookError of the first one that refuses. */
export function prepareAgentJob(spec: AgentSpec, snap: HooksSnapshot, host: GatewayHost): AgentJob {
  const agentId = resolveAgentId(spec.agentId, snap, host);
  const hookKey = resolveSessionKey(spec.requestSessionKey, spec.mappingSessionKey, snap);
  checkModel(spec.model, host);
  const deliver = spec.deliver ?? true;
  const channel = spec.channel ?? 'last';
  if (deliver) checkChannel(channel, host);
  const name = spec.name?.trim() || 'agent';
  const message = spec.message.trim();
  return {
    runId: randomUUID(),
    name,
    agentId,
    sessionKey: `agent:${agentId}:${hookKey}`,
    prompt: spec.allowUnsafeExternalContent || spec.alreadyWrapped
      ? message
      : wrapExternalContent(message, { source: spec.source, hookName: name }),
    model: spec.model,
    thinking: spec.thinking,
    timeoutMs: Math.round((spec.timeoutSeconds ?? host.agents.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000),
    wakeMode: spec.wakeMode ?? 'now',
    deliver,
    channel,
    to: spec.to,
  };
}
