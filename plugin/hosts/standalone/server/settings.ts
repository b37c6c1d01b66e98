// The standalone gateway's own config: everything in the file except the hooks block (the plugin
// validates that), plus the first-run default file.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import gatewayConfigSchema from '../../../../schema/gateway-config.schema.json' with { type: 'json' };
import { CHANNEL_ORDER, type AgentInfo, type ChannelName, type GatewayHost, type HostAgents } from '../../../host.ts';
import { compileSchema, formatErrors } from '../../../kits/config.ts';
import { ConfigError } from '../../../host-kit.ts';
import { resolveChannels, type ResolvedChannels } from '../../../../channels/index.ts';
import type { ProviderConfig } from './agent-runner.ts';
import { defaultMaxConnections, defaultShare, type ConnectionLimits } from './connection-limit.ts';
import { DEFAULT_STORAGE_SETTINGS, type StorageSettings } from '../storage/index.ts';

const DEFAULT_PORT = 18789;
const DEFAULT_BIND = '127.0.0.1';
export const DEFAULT_MODEL = 'echo/echo';
const DEFAULT_HEARTBEAT_SECONDS = 1800;
const DEFAULT_SHUTDOWN_GRACE_SECONDS = 5;

/** gateway.role: with hooks.queue, a door ("ingress") or a taker ("assistant"). */
export type GatewayRole = 'assistant' | 'ingress';

export interface GatewaySettings {
  port: number;
  role: GatewayRole;
  connections: ConnectionLimits;
  bind: string;
  gatewayToken: string;
  agents: AgentInfo[];
  defaultAgentId: string;
  defaultModel: string;
  models?: string[];
  timeoutSeconds?: number;
  providers: Record<string, ProviderConfig>;
  channels: ChannelName[];
  channelDefaults: Partial<Record<ChannelName, string>>;
  /** The channels with credentials (they send), and the redactor of every channel secret. */
  senders: ResolvedChannels;
  /** The channels block as written: a change applies at the next start. */
  channelsText: string;
  heartbeatSeconds: number;
  shutdownGraceMs: number;
  storage: StorageSettings;
  /** gateway.metrics: counting on (enabled), and /metrics open without the gateway token (public). */
  metrics: { enabled: boolean; public: boolean };
}

export interface GatewayFile {
  gateway?: {
    port?: number;
    bind?: string;
    auth?: { token?: string };
    shutdownGraceSeconds?: number;
    role?: GatewayRole;
    maxConnections?: number;
    maxConnectionsPerAddress?: number;
    metrics?: { enabled?: boolean; public?: boolean };
  };
  agents?: { defaults?: { model?: string; models?: string[]; timeoutSeconds?: number }; list?: AgentInfo[] };
  models?: { providers?: Record<string, ProviderConfig> };
  channels?: Partial<Record<ChannelName, { defaultTo?: string } & Record<string, unknown>>>;
  heartbeat?: { everySeconds?: number };
  storage?: Partial<StorageSettings>;
}

const validate = compileSchema<GatewayFile>(gatewayConfigSchema);

/** The agents a host offers the plugin, as the settings name them. */
export function hostAgents(settings: GatewaySettings): HostAgents {
  return {
    list: settings.agents,
    defaultId: settings.defaultAgentId,
    models: settings.models,
    timeoutSeconds: settings.timeoutSeconds,
  };
}

/**
 * A host that only answers what loading a config asks (agents, channels); nothing runs. For checking
 * a config as a start would: `config check`, `webhooks test`, the Gmail watcher's hook.
 */
export function checkingHost(configPath: string, settings: GatewaySettings): GatewayHost {
  const unused = (): never => {
    throw new Error('a checking host runs nothing');
  };
  return {
    logger: { info() {}, warn() {}, error() {} },
    configPath,
    configDir: path.dirname(configPath),
    agents: hostAgents(settings),
    channels: settings.channels,
    sessions: { mainSessionKey: unused, enqueueSystemEvent: unused, requestHeartbeat: unused, lastRoute: unused },
    runs: { runIsolatedTurn: unused },
    replies: { send: unused },
  };
}

/**
 * The gateway's own credentials (its admin token, every channel's secrets, the model providers'
 * keys): the core masks them in whatever a peer sends back (GatewayHost.secrets).
 */
export function gatewaySecrets(settings: GatewaySettings): string[] {
  const keys = Object.values(settings.providers).map((p) => p.apiKey);
  return [settings.gatewayToken, ...settings.senders.secrets, ...keys].filter(
    (s): s is string => typeof s === 'string' && s !== '',
  );
}

/** The URL a local client reaches a gateway bound to `bind` at: one listening everywhere, on loopback. */
export function localUrl(bind: string, port: number): string {
  const host = bind === '0.0.0.0' ? '127.0.0.1' : bind === '::' ? '::1' : bind;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export function resolveGatewaySettings(file: Record<string, unknown>, configPath: string): GatewaySettings {
  if (!validate(file)) throw new ConfigError(formatErrors(validate.errors), configPath);
  const f = file as GatewayFile;
  const agents = f.agents?.list ?? [{ id: 'main', default: true }];
  const problems: string[] = [];
  const defaults = agents.filter((a) => a.default);
  if (defaults.length > 1) problems.push('agents.list: only one agent may be the default');
  const ids = new Set<string>();
  agents.forEach((a, i) => {
    if (ids.has(a.id)) problems.push(`agents.list[${i}].id "${a.id}" is listed twice`);
    ids.add(a.id);
  });
  const channelDefaults: Partial<Record<ChannelName, string>> = {};
  for (const [name, c] of Object.entries(f.channels ?? {})) {
    if (c?.defaultTo) channelDefaults[name as ChannelName] = c.defaultTo;
  }
  const storage: StorageSettings = { ...DEFAULT_STORAGE_SETTINGS, ...f.storage };
  for (const key of ['sessionRetainBytes', 'outboxRetainBytes', 'runIndexRetainBytes'] as const) {
    // A log keeps its newest full segment and the one being written whatever the limit.
    if (storage[key] < 2 * storage.segmentBytes)
      problems.push(`storage.${key} must be at least twice storage.segmentBytes (${storage.segmentBytes})`);
  }
  const senders = resolveChannels(f.channels, path.dirname(configPath), problems);
  if (problems.length) throw new ConfigError(problems, configPath);
  return {
    port: f.gateway?.port ?? DEFAULT_PORT,
    role: f.gateway?.role ?? 'assistant',
    connections: connectionLimits(f.gateway),
    bind: f.gateway?.bind ?? DEFAULT_BIND,
    gatewayToken: f.gateway!.auth!.token!,
    agents,
    defaultAgentId: (defaults[0] ?? agents[0]!).id,
    defaultModel: f.agents?.defaults?.model ?? DEFAULT_MODEL,
    models: f.agents?.defaults?.models,
    timeoutSeconds: f.agents?.defaults?.timeoutSeconds,
    providers: f.models?.providers ?? {},
    channels: CHANNEL_ORDER.filter((c) => f.channels?.[c] !== undefined),
    channelDefaults,
    senders,
    channelsText: JSON.stringify(f.channels ?? {}),
    heartbeatSeconds: f.heartbeat?.everySeconds ?? DEFAULT_HEARTBEAT_SECONDS,
    shutdownGraceMs: (f.gateway?.shutdownGraceSeconds ?? DEFAULT_SHUTDOWN_GRACE_SECONDS) * 1000,
    storage,
    metrics: { enabled: f.gateway?.metrics?.enabled ?? true, public: f.gateway?.metrics?.public ?? false },
  };
}

function freshToken(): string {
  return randomBytes(24).toString('base64url');
}

/** The config written on first run: hooks on, fresh tokens, mode 0600. */
export async function writeDefaultConfig(file: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  // wx: never overwrite a file that appeared meanwhile.
  await writeFile(file, defaultConfigText(), { mode: 0o600, flag: 'wx' });
}

/** The text of the first-run config, with fresh tokens. */
export function defaultConfigText(): string {
  return `// hookgate gateway config (JSON5). Every key is described in hookgate's docs/reference/config.md.
{
  gateway: {
    port: ${DEFAULT_PORT},
    bind: "${DEFAULT_BIND}",
    // Admin API (/api/...): Authorization: Bearer <this token>. Never send it to /hooks.
    auth: { token: "${freshToken()}" },
  },
  hooks: {
    enabled: true,
    // Hook endpoints (${'/hooks'}/...): Authorization: Bearer <this token>.
    token: "${freshToken()}",
    path: "/hooks",
    defaultSessionKey: "hook:ingress",
    allowRequestSessionKey: false,
    allowedSessionKeyPrefixes: ["hook:"],
  },
  agents: {
    // echo/echo is the built-in offline model: it replies with what it was given. For real answers
    // (OpenAI, a local Ollama, any OpenAI-compatible server) see docs/guide/model-providers.md.
    defaults: { model: "${DEFAULT_MODEL}", timeoutSeconds: 600 },
    list: [{ id: "main", default: true }],
  },
  // Chat channels: without credentials deliveries are only recorded in the outbox (GET /api/outbox);
  // docs/guide/channels.md says how to give a channel its credentials so it sends for real.
  channels: { slack: { defaultTo: "#hooks" } },
  heartbeat: { everySeconds: ${DEFAULT_HEARTBEAT_SECONDS} },
}
`;
}

function connectionLimits(gateway: GatewayFile['gateway']): ConnectionLimits {
  const maxConnections = gateway?.maxConnections ?? defaultMaxConnections();
  return {
    maxConnections,
    maxConnectionsPerAddress: gateway?.maxConnectionsPerAddress ?? defaultShare(maxConnections),
  };
}
