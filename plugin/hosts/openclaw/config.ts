// Reads OpenClaw's config layout: where the hooks block sits (plugins.entries.<id>.config), which
// gateway keys the core checks against, and OpenClaw's agents, model allowlist and channels.
import { CHANNEL_ORDER, type AgentInfo, type ChannelName, type HostAgents, type SelectedConfig } from '../../host.ts';
import { HOOKS_KEY, PLUGIN_ID } from './identity.ts';

type Rec = Record<string, unknown>;

function rec(v: unknown): Rec | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : undefined;
}

/** OpenClaw substitutes ${VAR} in config strings; a missing variable leaves the value unusable (undefined). */
function substituteEnv(value: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  let missing = false;
  const out = value.replace(/\$\{([A-Z_][A-Z0-9_]*)\}/g, (_m, name: string) => {
    const v = env[name];
    if (v === undefined || v === '') missing = true;
    return v ?? '';
  });
  return missing ? undefined : out;
}

function envString(v: unknown, env: NodeJS.ProcessEnv): string | undefined {
  return typeof v === 'string' ? substituteEnv(v, env) : undefined;
}

/**
 * The plugin's settings: plugins.entries.hookgate.config, with the same keys as the standalone hooks
 * block (the core reads "${NAME}" tokens and secrets, token arrays and tokenFile itself).
 */
export function selectOpenClawConfig(file: Rec, env: NodeJS.ProcessEnv = process.env): SelectedConfig {
  const entry = rec(rec(rec(file.plugins)?.entries)?.[PLUGIN_ID]);
  const raw = rec(entry?.config);
  let hooks: unknown = entry?.config;
  // An entry switched off in OpenClaw switches the hooks off too, whatever its config says.
  if (entry?.enabled === false && raw) hooks = { ...(hooks as Rec), enabled: false };
  const gateway = rec(file.gateway);
  return {
    hooks,
    hooksKey: HOOKS_KEY,
    gatewayToken: envString(rec(gateway?.auth)?.token, env) ?? env.OPENCLAW_GATEWAY_TOKEN,
    trustedProxies: gateway?.trustedProxies,
  };
}

/** OpenClaw normalises agent ids to lower case. */
function normalizeAgentId(id: string): string {
  return id.trim().toLowerCase();
}

/** agents.list (default: one agent "main"), agents.defaults.models (a map keyed by provider/model). */
export function openClawAgents(config: unknown): HostAgents {
  const agents = rec(rec(config)?.agents);
  const defaults = rec(agents?.defaults);
  const listed: AgentInfo[] = [];
  if (Array.isArray(agents?.list)) {
    for (const a of agents.list) {
      const id = rec(a)?.id;
      if (typeof id === 'string' && id.trim())
        listed.push({ id: normalizeAgentId(id), default: rec(a)?.default === true });
    }
  }
  const list = listed.length ? listed : [{ id: 'main', default: true }];
  const defaultId = (list.find((a) => a.default) ?? list[0]!).id;
  const timeout = defaults?.timeoutSeconds;
  return {
    list,
    defaultId,
    models: modelAllowlist(defaults?.models),
    timeoutSeconds: typeof timeout === 'number' && timeout > 0 && timeout <= 3600 ? timeout : undefined,
  };
}

/** The keys of agents.defaults.models plus their aliases; undefined (not enforced) when unset or empty. */
function modelAllowlist(models: unknown): string[] | undefined {
  if (Array.isArray(models))
    return models.length ? models.filter((m): m is string => typeof m === 'string') : undefined;
  const map = rec(models);
  if (!map || Object.keys(map).length === 0) return undefined;
  const out: string[] = [];
  for (const [ref, spec] of Object.entries(map)) {
    out.push(ref);
    const alias = rec(spec)?.alias;
    if (typeof alias === 'string' && alias.trim()) out.push(alias.trim());
  }
  return out;
}

/** Channels configured under channels.<name> and not switched off, in the spec's order. */
export function openClawChannels(config: unknown): ChannelName[] {
  const channels = rec(rec(config)?.channels);
  return CHANNEL_ORDER.filter((name) => {
    const block = rec(channels?.[name]);
    return block !== undefined && block.enabled !== false;
  });
}
