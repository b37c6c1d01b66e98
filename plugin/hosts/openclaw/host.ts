// GatewayHost over OpenClaw's plugin runtime: system events and heartbeats straight from the route
// (api.runtime.system), agent runs and deliveries through the service queue (api.runtime.subagent,
// channel outbound adapters), agents/models/channels read from OpenClaw's live config.
import path from 'node:path';
import {
  CHANNEL_ORDER,
  type ChannelName,
  type GatewayHost,
  type HostAgents,
  type LogFields,
  type Logger,
  type Route,
} from '../../host-kit.ts';
import type { IdempotencyJournal } from './idempotency-journal.ts';
import type { OpenClawLogger, OpenClawPluginApi } from './api.ts';
import { openClawAgents, openClawChannels, selectOpenClawConfig } from './config.ts';
import type { ServiceQueue } from './run-queue.ts';
import { deliverReply, runTurn } from './turns.ts';

export const mainSessionKey = (agentId: string): string => `agent:${agentId}:main`;

/** OpenClaw's logger takes one line: the message, then key=value fields. */
function lineLogger(log: OpenClawLogger): Logger {
  const line = (msg: string, fields?: LogFields): string => {
    if (!fields) return msg;
    const parts = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : String(v)}`);
    return parts.length ? `${msg} ${parts.join(' ')}` : msg;
  };
  return {
    info: (msg, fields) => log.info(line(msg, fields)),
    warn: (msg, fields) => log.warn(line(msg, fields)),
    error: (msg, fields) => log.error(line(msg, fields)),
  };
}

/** The gateway's current config: the live runtime snapshot when there is one, else the one at registration. */
function liveConfig(api: OpenClawPluginApi): unknown {
  try {
    return api.runtime.config?.current() ?? api.config;
  } catch {
    return api.config;
  }
}

export interface OpenClawHostOptions {
  api: OpenClawPluginApi;
  configPath: string;
  queue: ServiceQueue;
  journal: IdempotencyJournal;
}

export function createOpenClawHost({ api, configPath, queue, journal }: OpenClawHostOptions): GatewayHost {
  const { runtime } = api;
  // Mapped once per config object: OpenClaw replaces the object when its config changes.
  let seen: unknown;
  let agents: HostAgents = openClawAgents(api.config);
  let channels: ChannelName[] = openClawChannels(api.config);
  const refresh = (): void => {
    const cfg = liveConfig(api);
    if (cfg === seen) return;
    seen = cfg;
    agents = openClawAgents(cfg);
    channels = openClawChannels(cfg);
  };

  const lastRoute = (agentId: string): Route | undefined => {
    let entry;
    try {
      entry = runtime.agent?.session?.getSessionEntry({ agentId, sessionKey: mainSessionKey(agentId) });
    } catch {
      return undefined;
    }
    const channel = entry?.deliveryContext?.channel ?? entry?.lastChannel;
    const to = entry?.deliveryContext?.to ?? entry?.lastTo;
    if (!channel || !(CHANNEL_ORDER as readonly string[]).includes(channel)) return undefined;
    refresh();
    if (!channels.includes(channel as ChannelName)) return undefined;
    return { channel: channel as ChannelName, ...(to ? { to } : {}) };
  };

  return {
    logger: lineLogger(api.logger),
    configPath,
    configDir: path.dirname(configPath),
    selectConfig: (file) => selectOpenClawConfig(file),
    get agents() {
      refresh();
      return agents;
    },
    get channels() {
      refresh();
      return channels;
    },
    sessions: {
      mainSessionKey,
      async enqueueSystemEvent(sessionKey, text, meta) {
        // The key is on disk before the event is queued: a failure leaves neither.
        if (meta.idempotency) await journal.append(meta.idempotency);
        // OpenClaw drops an event equal to the one before it in the queue; that is not a failure.
        runtime.system.enqueueSystemEvent(text, { sessionKey });
      },
      requestHeartbeat({ agentId, reason }) {
        runtime.system.requestHeartbeat({
          source: 'hook',
          intent: 'immediate',
          reason,
          agentId,
          sessionKey: mainSessionKey(agentId),
        });
      },
      lastRoute,
    },
    runs: {
      runIsolatedTurn: (turn) => queue.run(() => runTurn(runtime, turn), turn.signal),
      // An accepted run's key is on disk before its 202.
      onRunUpdate: (record) =>
        record.status === 'queued' && record.idempotency ? journal.append(record.idempotency) : undefined,
    },
    idempotency: { restore: (limits) => journal.restore(limits) },
    deliver: (d) => queue.run(() => deliverReply(runtime, liveConfig(api), d)),
  };
}
