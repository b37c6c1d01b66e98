// The routing rules an agent action must pass: which agent, which session, which model, which channel.
import { randomUUID } from 'node:crypto';
import { refuse } from '../errors.ts';
import { CHANNEL_ORDER, type ChannelName, type GatewayHost, type Route } from '../host.ts';
import { matchesSessionPrefix } from '../settings/session-prefixes.ts';

/** The settings an agent action is routed by: the part of the hooks snapshot this room reads. */
export interface RoutingPolicy {
  /** null: any agent may be routed to explicitly. */
  readonly allowedAgentIds: ReadonlySet<string> | null;
  readonly defaultSessionKey: string | undefined;
  readonly allowRequestSessionKey: boolean;
  /** Lower-cased; null: no restriction. */
  readonly allowedSessionKeyPrefixes: readonly string[] | null;
}

/** Unknown ids fall back to the default agent; the allowlist is checked on the agent that results. */
export function resolveAgentId(requested: string | undefined, snap: RoutingPolicy, host: GatewayHost): string {
  if (requested === undefined) return host.agents.defaultId;
  const id = requested.trim();
  const known = host.agents.list.some((a) => a.id === id);
  const resolved = known ? id : host.agents.defaultId;
  if (snap.allowedAgentIds !== null && !snap.allowedAgentIds.has(resolved)) {
    throw refuse.agentNotAllowed(
      snap.allowedAgentIds.size === 0
        ? 'agentId routing is disabled (hooks.allowedAgentIds is empty)'
        : `agent "${resolved}" is not in hooks.allowedAgentIds`,
    );
  }
  return resolved;
}

/** Request key (only when allowed and prefix-matched), else mapping key, else the default, else a fresh one. */
export function resolveSessionKey(
  requestKey: string | undefined,
  mappingKey: string | undefined,
  snap: RoutingPolicy,
): string {
  if (requestKey !== undefined) {
    if (!snap.allowRequestSessionKey) {
      throw refuse.sessionKeyDisabled(
        'sessionKey may not be set by the request (hooks.allowRequestSessionKey is false)',
      );
    }
    if (!matchesSessionPrefix(requestKey, snap.allowedSessionKeyPrefixes)) {
      throw refuse.sessionKeyNotAllowed('sessionKey does not start with any of hooks.allowedSessionKeyPrefixes');
    }
    return requestKey;
  }
  if (mappingKey !== undefined) {
    if (!matchesSessionPrefix(mappingKey, snap.allowedSessionKeyPrefixes)) {
      throw refuse.sessionKeyNotAllowed(
        "the mapping's sessionKey does not start with any of hooks.allowedSessionKeyPrefixes",
      );
    }
    return mappingKey;
  }
  return snap.defaultSessionKey ?? `hook:${randomUUID()}`;
}

export function checkModel(model: string | undefined, host: GatewayHost): void {
  const allowed = host.agents.models;
  if (model === undefined || allowed === undefined) return;
  if (!allowed.includes(model)) {
    throw refuse.modelNotAllowed(`model "${model}" is not in agents.defaults.models`);
  }
}

/** A named channel must be one the gateway has; `last` is resolved when the reply is ready. */
export function checkChannel(channel: 'last' | ChannelName, host: GatewayHost): void {
  if (channel !== 'last' && !host.channels.includes(channel)) {
    throw refuse.invalidPayload(`channel "${channel}" is not configured on this gateway`);
  }
}

/**
 * Where a reply goes: the named channel, or the main session's last route, or the first available
 * channel; undefined when `last` finds none (no channel configured or available, as in an OpenClaw
 * without chat channels): the reply has nowhere to go, which is not a failure of the run.
 */
export function resolveRoute(
  channel: 'last' | ChannelName,
  to: string | undefined,
  agentId: string,
  host: GatewayHost,
): Route | undefined {
  const last = host.sessions.lastRoute(agentId);
  if (channel !== 'last') return { channel, to: to ?? (last?.channel === channel ? last.to : undefined) };
  if (last) return { channel: last.channel, to: to ?? last.to };
  const first = CHANNEL_ORDER.find((c) => host.channels.includes(c));
  return first ? { channel: first, to } : undefined;
}
