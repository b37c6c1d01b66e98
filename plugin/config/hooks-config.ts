// Turns the hooks block (already read from the file) into a snapshot without its mappings, or a
// ConfigError listing every problem with the key it is about.
import path from 'node:path';
import { ConfigError } from '../errors.ts';
import type { SelectedConfig } from '../host.ts';
import { digestToken } from '../auth/token.ts';
import { Credentials } from '../auth/credentials.ts';
import { longEnough, readSecretFile, resolveSecret } from '../settings/secret-values.ts';
import type { AuthRateLimit } from '../auth/limiter.ts';
import { compileTrustedProxies, type TrustedProxies } from '../http/trusted-proxies.ts';
import { compileAddressList } from '../http/address-list.ts';
import { compileRateLimit, type HookRateLimit, type RateLimitConfig } from '../auth/hook-rate-limit.ts';
import { formatErrors, validateHooksConfig } from '../settings/schemas.ts';
import { DEFAULTS } from '../settings/defaults.ts';
import { matchesSessionPrefix } from '../settings/session-prefixes.ts';
import type { HooksSnapshot } from '../request/snapshot.ts';
import type { SharedStateConfig } from '../redis/shared-redis.ts';
import type { QueueSettings } from '../queue/queue-settings.ts';
import { PRESETS, type PresetBlocks } from '../mappings/presets.ts';
import type { RetryPolicy } from '../retry/retry-policy.ts';
import type { WaitLimits } from '../runs/wait-slots.ts';
import { compileBudget, type Budget, type BudgetConfig } from '../budgets/budget.ts';

/** The hooks block: the core's keys and each preset's own block (presets.ts). */
export type HooksBlock = CoreHooksBlock & PresetBlocks;

interface CoreHooksBlock {
  enabled?: boolean;
  token?: string | string[];
  tokenFile?: string;
  path?: string;
  allowedAgentIds?: string[];
  defaultSessionKey?: string;
  allowRequestSessionKey?: boolean;
  allowedSessionKeyPrefixes?: string[];
  presets?: string[];
  mappings?: unknown[];
  transformsDir?: string;
  transformTimeoutMs?: number;
  maxBodyBytes?: number;
  bodyTimeoutSeconds?: number;
  authRateLimit?: Partial<AuthRateLimit>;
  maxConcurrentRuns?: number;
  maxQueuedRuns?: number;
  dedupe?: { windowSeconds?: number; maxKeys?: number };
  retry?: Partial<RetryPolicy>;
  maxWaitSeconds?: number;
  maxWaitingRequests?: Partial<WaitLimits>;
  maxHeld?: number;
  maxHeldBytes?: number;
  sessionRetention?: { seconds?: number };
  console?: { enabled?: boolean; sessionHours?: number };
  requestLog?: { maxEntries?: number; retainDays?: number };
  sharedState?: { redis: string; keyPrefix?: string };
  queue?: { redis: string; name?: string; leaseSeconds?: number; maxWaiting?: number; timeoutMs?: number };
  /** What all hooks together may spend. */
  budget?: BudgetConfig;
  /** Source allowlist for every hook request: IPs and CIDRs. */
  allowedSources?: string[];
  /** Settings of the wake and agent endpoints. */
  endpoints?: { wake?: EndpointBlock; agent?: AgentEndpointBlock };
}

interface EndpointBlock {
  rateLimit?: RateLimitConfig;
}

/** /hooks/agent's own block: its rate limit, and what only an agent run has. */
interface AgentEndpointBlock extends EndpointBlock {
  acceptedStatus?: 200 | 202;
  maxConcurrentRuns?: number;
  budget?: BudgetConfig;
}

/** Trim, one leading slash, no trailing slash; undefined when nothing is left (`/`). */
function normalizeHooksPath(raw: string): string | undefined {
  const trimmed = raw.trim().replace(/\/+$/, '');
  if (trimmed === '') return undefined;
  return `/${trimmed.replace(/^\/+/, '')}`;
}

/** The snapshot's keys that come from the hooks block itself; compileMappings adds the mappings. */
export type HooksSettings = Omit<HooksSnapshot, 'mappings' | 'mappingIndex' | 'hookConcurrency'> & {
  /** hooks.endpoints.agent.maxConcurrentRuns: part of the snapshot's hookConcurrency. */
  readonly agentMaxConcurrentRuns: number | undefined;
};

export function resolveHooksConfig(selected: SelectedConfig, configDir: string, file?: string): HooksSettings {
  const root = selected.hooksKey;
  const raw = selected.hooks ?? {};
  if (!validateHooksConfig(raw)) {
    throw new ConfigError(formatErrors(validateHooksConfig.errors, root), file);
  }
  const h = raw as HooksBlock;
  const problems: string[] = [];
  const enabled = h.enabled === true;

  let hooksPath: string = DEFAULTS.path;
  if (h.path !== undefined) {
    const p = normalizeHooksPath(h.path);
    if (p === undefined) problems.push(`${root}.path must not be "/" (hooks need their own prefix)`);
    else if (/[\s?#%\\]|\/\.\.?(\/|$)|\/\//.test(p)) problems.push(`${root}.path "${h.path}" must be a plain URL path`);
    else hooksPath = p;
  }

  const tokens = hookTokens(h, root, configDir, problems);
  if (enabled && tokens.length === 0)
    problems.push(`${root}.token (or ${root}.tokenFile) is required when ${root}.enabled is true`);
  const gatewayToken = selected.gatewayToken?.trim();
  if (gatewayToken && tokens.includes(gatewayToken)) {
    problems.push(`${root}.token must differ from gateway.auth.token (use a dedicated hook token)`);
  }

  const prefixes = h.allowedSessionKeyPrefixes?.map((p) => p.trim().toLowerCase()) ?? null;
  if (h.defaultSessionKey !== undefined && !matchesSessionPrefix(h.defaultSessionKey, prefixes)) {
    problems.push(
      `${root}.defaultSessionKey "${h.defaultSessionKey}" does not start with any of ${root}.allowedSessionKeyPrefixes`,
    );
  }

  let trustedProxies: TrustedProxies | undefined;
  try {
    trustedProxies = compileTrustedProxies(trustedProxyList(selected.trustedProxies, problems));
  } catch (err) {
    problems.push((err as Error).message);
  }

  const transformsRoot = path.resolve(configDir, 'hooks', 'transforms');
  let transformsDir = transformsRoot;
  if (h.transformsDir !== undefined) {
    const resolved = path.resolve(transformsRoot, h.transformsDir);
    const rel = path.relative(transformsRoot, resolved);
    if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
      problems.push(`${root}.transformsDir "${h.transformsDir}" must stay inside ${transformsRoot}`);
    } else transformsDir = resolved;
  }

  const queueUrl = h.queue && redisUrl(h.queue.redis, `${root}.queue.redis`, problems);
  // The queue implies shared state (lockouts, dedupe keys, pauses) on its Redis unless named apart.
  const sharedState =
    sharedStateConfig(h, root, problems) ??
    (queueUrl && h.sharedState === undefined
      ? Object.freeze({ url: queueUrl, keyPrefix: DEFAULTS.sharedStateKeyPrefix })
      : undefined);
  const queue: QueueSettings | undefined =
    h.queue && queueUrl
      ? Object.freeze({
          url: queueUrl,
          name: h.queue.name ?? DEFAULTS.queue.name,
          keyPrefix: DEFAULTS.sharedStateKeyPrefix,
          leaseMs: (h.queue.leaseSeconds ?? DEFAULTS.queue.leaseSeconds) * 1000,
          maxWaiting: h.queue.maxWaiting ?? DEFAULTS.queue.maxWaiting,
          timeoutMs: h.queue.timeoutMs ?? DEFAULTS.queue.timeoutMs,
        })
      : undefined;
  const allowedSources = h.allowedSources && compileAddressList(h.allowedSources, `${root}.allowedSources`, problems);
  const endpointRateLimits: { wake?: HookRateLimit; agent?: HookRateLimit } = {};
  for (const name of ['wake', 'agent'] as const) {
    const limit = h.endpoints?.[name]?.rateLimit;
    if (limit) endpointRateLimits[name] = compileRateLimit(name, limit);
  }

  const budget = h.budget && compileBudget(h.budget, `${root}.budget`, problems);
  const endpointBudgets: { agent?: Budget } = {};
  const agentBudget = h.endpoints?.agent?.budget;
  if (agentBudget) {
    const compiled = compileBudget(agentBudget, `${root}.endpoints.agent.budget`, problems);
    if (compiled) endpointBudgets.agent = compiled;
  }

  if (problems.length) throw new ConfigError(problems, file);

  const allowed = h.allowedAgentIds;
  return Object.freeze({
    enabled,
    path: hooksPath,
    tokenDigests: Object.freeze(tokens.map(digestToken)),
    credentials: Credentials.ofHookTokens(tokens),
    allowedAgentIds: allowed === undefined || allowed.includes('*') ? null : new Set(allowed.map((a) => a.trim())),
    defaultSessionKey: h.defaultSessionKey,
    allowRequestSessionKey: h.allowRequestSessionKey === true,
    allowedSessionKeyPrefixes: prefixes ? Object.freeze(prefixes) : null,
    maxBodyBytes: h.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
    bodyTimeoutMs: Math.round((h.bodyTimeoutSeconds ?? DEFAULTS.bodyTimeoutSeconds) * 1000),
    authRateLimit: Object.freeze({ ...DEFAULTS.authRateLimit, ...h.authRateLimit }),
    maxConcurrentRuns: h.maxConcurrentRuns ?? DEFAULTS.maxConcurrentRuns,
    maxQueuedRuns: h.maxQueuedRuns ?? DEFAULTS.maxQueuedRuns,
    trustedProxies,
    allowedSources,
    endpointRateLimits: Object.freeze(endpointRateLimits),
    agentAcceptedStatus: h.endpoints?.agent?.acceptedStatus ?? 202,
    agentMaxConcurrentRuns: h.endpoints?.agent?.maxConcurrentRuns,
    ...(budget ? { budget } : {}),
    endpointBudgets: Object.freeze(endpointBudgets),
    transformsRoot,
    transformsDir,
    transformTimeoutMs: h.transformTimeoutMs ?? DEFAULTS.transformTimeoutMs,
    presets: Object.freeze([...(h.presets ?? [])]),
    dedupe: Object.freeze({
      windowMs: Math.round((h.dedupe?.windowSeconds ?? DEFAULTS.dedupe.windowSeconds) * 1000),
      maxKeys: h.dedupe?.maxKeys ?? DEFAULTS.dedupe.maxKeys,
    }),
    retry: Object.freeze({ ...DEFAULTS.retry, ...h.retry }),
    maxWaitMs: Math.round((h.maxWaitSeconds ?? DEFAULTS.maxWaitSeconds) * 1000),
    maxWaitingRequests: Object.freeze({ ...DEFAULTS.maxWaitingRequests, ...h.maxWaitingRequests }),
    maxHeld: h.maxHeld ?? DEFAULTS.maxHeld,
    maxHeldBytes: h.maxHeldBytes ?? DEFAULTS.maxHeldBytes,
    sessionRetentionMs: Math.round((h.sessionRetention?.seconds ?? DEFAULTS.sessionRetentionSeconds) * 1000),
    console: Object.freeze({ ...DEFAULTS.console, ...h.console }),
    ownerToken: gatewayToken ? digestToken(selected.gatewayToken!) : undefined,
    requestLog: Object.freeze({
      maxEntries: h.requestLog?.maxEntries ?? DEFAULTS.requestLog.maxEntries,
      retainMs: Math.round((h.requestLog?.retainDays ?? DEFAULTS.requestLog.retainDays) * 86_400_000),
    }),
    mappingConfigs: Object.freeze([...(h.mappings ?? [])]),
    presetSettings: presetSettingsOf(h),
    sharedState,
    queue,
  });
}

/** Each registered preset's block under its name, as the schema admitted it: the preset checks its own. */
function presetSettingsOf(h: HooksBlock): ReadonlyMap<string, unknown> {
  const blocks = h as Readonly<Record<string, unknown>>;
  const out = new Map<string, unknown>();
  for (const name of PRESETS.keys()) if (Object.hasOwn(blocks, name)) out.set(name, blocks[name]);
  return out;
}

/** hooks.sharedState: the Redis URL (maybe "${NAME}"), checked for its scheme without quoting it. */
function sharedStateConfig(h: HooksBlock, root: string, problems: string[]): SharedStateConfig | undefined {
  if (h.sharedState === undefined) return undefined;
  const url = redisUrl(h.sharedState.redis, `${root}.sharedState.redis`, problems);
  if (url === undefined) return undefined;
  return Object.freeze({ url, keyPrefix: h.sharedState.keyPrefix ?? DEFAULTS.sharedStateKeyPrefix });
}

/** A Redis URL key (maybe "${NAME}"), checked for its scheme without quoting it. */
function redisUrl(value: string, key: string, problems: string[]): string | undefined {
  const url = resolveSecret(value, key, problems);
  if (url === undefined) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    // The URL may carry a password: the problem names the key only.
  }
  if (parsed?.protocol !== 'redis:' && parsed?.protocol !== 'rediss:') {
    problems.push(`${key} must be a redis:// or rediss:// URL`);
    return undefined;
  }
  return url;
}

/** hooks.token (a string or an array, each maybe "${NAME}") and hooks.tokenFile, all accepted. */
function hookTokens(h: HooksBlock, root: string, configDir: string, problems: string[]): string[] {
  const out: string[] = [];
  const listed = h.token === undefined ? [] : Array.isArray(h.token) ? h.token : [h.token];
  listed.forEach((t, i) => {
    const key = Array.isArray(h.token) ? `${root}.token[${i}]` : `${root}.token`;
    addToken(out, resolveSecret(t, key, problems), key, problems);
  });
  if (h.tokenFile !== undefined) {
    const key = `${root}.tokenFile`;
    addToken(out, readSecretFile(h.tokenFile, configDir, key, problems), key, problems);
  }
  return out;
}

/** A token too short is still listed: its length is the problem to report, not a missing token. */
function addToken(into: string[], value: string | undefined, key: string, problems: string[]): void {
  if (value === undefined) return;
  longEnough(value, key, problems);
  into.push(value);
}

function trustedProxyList(value: unknown, problems: string[]): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    problems.push('gateway.trustedProxies must be an array of IP addresses or CIDR ranges');
    return undefined;
  }
  return value as string[];
}

/** The standalone layout: `hooks` at the top, `gateway.auth.token`, `gateway.trustedProxies`. */
export function selectStandaloneConfig(file: Record<string, unknown>): SelectedConfig {
  const gateway = asRecord(file.gateway);
  const auth = asRecord(gateway?.auth);
  return {
    hooks: file.hooks,
    hooksKey: 'hooks',
    gatewayToken: typeof auth?.token === 'string' ? auth.token : undefined,
    trustedProxies: gateway?.trustedProxies,
  };
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
