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

/** Key names that say a value is a credential: botToken, apiKey, password, clientSecret, … */
const SECRET_KEY = /token|secret|password|passwd|api_?key|access_?key|private_?key|credential/i;
/** Credentials are longer; shorter values under such keys are settings. */
const MIN_SECRET = 8;
/** Deeper than any real config: a cycle or a hostile shape stops here. */
const MAX_DEPTH = 12;

/**
 * The credentials in OpenClaw's config (its channels' tokens, its model providers' keys, its
 * gateway token; "${VAR}" read from the environment): every string value under a key whose name
 * says secret. The core masks them in what a channel or a run brings back (GatewayHost.secrets).
 */
export function openClawSecrets(config: unknown, env: NodeJS.ProcessEnv = process.env): string[] {
  const found = new Set<string>();
  const walk = (value: unknown, secret: boolean, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    if (typeof value === 'string') {
      const resolved = secret ? envString(value, env) : undefined;
      // A word such as "disabled" under a key like tokenMode is no credential: masking it would garble.
      if (resolved && resolved.length >= MIN_SECRET && !/\s|^[a-z]+$/.test(resolved)) found.add(resolved);
    } else if (Array.isArray(value)) {
      for (const v of value) walk(v, secret, depth + 1);
    } else {
      const r = rec(value);
      if (r) for (const [k, v] of Object.entries(r)) walk(v, secret || SECRET_KEY.test(k), depth + 1);
    }
  };
  walk(config, false, 0);
  return [...found];
}
