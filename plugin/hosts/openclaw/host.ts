// GatewayHost over OpenClaw's plugin runtime: system events journaled and handed to OpenClaw's queue
// (event-handover.ts), heartbeats straight from the route (api.runtime.system), agent runs journaled
// and run through the service queue (api.runtime.subagent), single reply tries through channel outbound
// adapters (reply-sends.ts; the core queues and retries), agents/models/channels read from OpenClaw's live config.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import {
  CHANNEL_ORDER,
  type ChannelName,
  type GatewayHost,
  type HostAgents,
  type IdempotencyRecord,
  type Route,
} from '../../host.ts';
import type { AckJournal, JournaledEvent, Pending } from './ack-journal.ts';
import type { IdempotencyJournal } from './idempotency-journal.ts';
import type { OpenClawPluginApi } from './api.ts';
import { lineLogger } from './line-logger.ts';
import { openClawAgents, openClawChannels, openClawSecrets, selectOpenClawConfig } from './config.ts';
import type { RecentRuns } from './recent-runs.ts';
import type { RunHistory } from './run-history.ts';
import type { ServiceQueue } from './run-queue.ts';
import { runTurn } from './turns.ts';
import { openClawReplies } from './reply-sends.ts';

export const mainSessionKey = (agentId: string): string => `agent:${agentId}:main`;

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
  /** What was acknowledged and OpenClaw has not taken in. */
  acks: AckJournal;
  /** Journals a system event and hands it to OpenClaw (now, or once OpenClaw takes events). */
  events(event: JournaledEvent): Promise<void>;
  /** What the last process left in the journal: its runs come back through runs.restore. */
  pending: Pending;
  /** The plugin's own durable state (retries, failures, held actions, pauses). */
  stateDir: string;
  /** What GET /hookgate/api/runs/<id> shows. */
  recentRuns: RecentRuns;
  /** The runs seen ending, kept on disk for the runs list after a restart. */
  runHistory: RunHistory;
}

const FINAL = new Set(['ok', 'error', 'timeout']);
/** How stale the agents and channels read from OpenClaw's live config may be. */
const CONFIG_LOOK_MS = 250;

export function createOpenClawHost(options: OpenClawHostOptions): GatewayHost {
  const { api, configPath, queue, journal, acks, events, pending, stateDir, recentRuns, runHistory } = options;
  const { runtime } = api;
  // Mapped once per config object: OpenClaw replaces the object when its config changes. Asked for
  // at most every CONFIG_LOOK_MS: each call into OpenClaw's runtime enters the plugin's scope, which
  // cost a wake inside OpenClaw a visible share of its time (docs/performance.md).
  let seen: unknown;
  let lookedAt = 0;
  let agents: HostAgents = openClawAgents(api.config);
  let channels: ChannelName[] = openClawChannels(api.config);
  const refresh = (): void => {
    const now = performance.now();
    if (now - lookedAt < CONFIG_LOOK_MS) return;
    lookedAt = now;
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

  // Tries so far of a run the core tries again (hooks.retry): each try is a new OpenClaw run.
  const triesSoFar = new Map<string, number>();
  // The credentials of the config last read: read again only when OpenClaw's config object changes.
  let secretsOf: unknown;
  let secrets: string[] = [];
  const logger = lineLogger(api.logger);
  return {
    logger,
    configPath,
    configDir: path.dirname(configPath),
    stateDir,
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
        // The key is in the event's own journal line (a crash keeps both or neither), then in the
        // idempotency journal, which outlives the event's line once OpenClaw has taken it in.
        await events({
          id: randomUUID(),
          at: Date.now(),
          sessionKey,
          text,
          ...(meta.runId ? { runId: meta.runId } : {}),
          ...(meta.idempotency ? { idem: meta.idempotency } : {}),
        });
        if (meta.idempotency) await journal.append(meta.idempotency);
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
      // OpenClaw's runtime deletes a session, its transcript too (hooks.sessionRetention: a run's own
      // one-off session only); an OpenClaw without it keeps them.
      ...(runtime.subagent.deleteSession
        ? {
            deleteSession: (sessionKey: string) =>
              runtime.subagent.deleteSession!({ sessionKey, deleteTranscript: true }),
          }
        : {}),
    },
    runs: {
      // Once OpenClaw has accepted the run, a restart must not start it again.
      runIsolatedTurn: (turn) =>
        queue.run(
          () =>
            runTurn(
              runtime,
              turn,
              (triesSoFar.get(turn.runId) ?? 0) + 1,
              () => acks.taken(turn.runId),
              (reason) => logger.warn('OpenClaw did not stop a timed-out run', { runId: turn.runId, reason }),
            ),
          turn.signal,
        ),
      // An accepted run and its key are on disk before its 202; its end is noted when it comes.
      onRunUpdate(record) {
        recentRuns.note(record);
        runHistory.note(record);
        if (record.attempts) triesSoFar.set(record.runId, record.attempts.length);
        if (FINAL.has(record.status)) triesSoFar.delete(record.runId);
        if (record.status === 'queued') {
          const writes: Promise<void>[] = [];
          if (record.idempotency) writes.push(journal.append(record.idempotency));
          if (record.run) writes.push(acks.run(record.run));
          return writes.length ? Promise.all(writes).then(() => undefined) : undefined;
        }
        return FINAL.has(record.status) ? acks.done(record.runId) : undefined;
      },
      restore: () => Promise.resolve({ rerun: pending.runs, interrupted: pending.interrupted }),
      history: () => Promise.resolve(runHistory.take()),
    },
    idempotency: { restore: (limits) => restoreKeys(journal, pending.keys, limits) },
    // The reply queue tells the run views of each delivery: GET /hookgate/api/runs/<id> shows the chain.
    replies: { ...openClawReplies(api, queue, () => liveConfig(api)), history: recentRuns },
    secrets: () => {
      const config = liveConfig(api);
      if (config !== secretsOf) {
        secretsOf = config;
        secrets = openClawSecrets(config);
      }
      return secrets;
    },
  };
}

/**
 * The idempotency journal's keys, with those of the events the last process journaled: a crash
 * between an event's line and its key's own line leaves the key in the first only. Those missing are
 * appended now, so they outlive the event's line.
 */
export async function restoreKeys(
  journal: IdempotencyJournal,
  fromEvents: readonly IdempotencyRecord[],
  limits: { windowMs: number; maxKeys: number },
): Promise<IdempotencyRecord[]> {
  const kept = await journal.restore(limits);
  const known = new Set(kept.map((r) => `${r.scope}\u0000${r.key}`));
  const oldest = Date.now() - limits.windowMs;
  const missing = fromEvents.filter((r) => r.at > oldest && !known.has(`${r.scope}\u0000${r.key}`));
  for (const r of missing) await journal.append(r);
  return [...kept, ...missing].sort((a, b) => a.at - b.at);
}
