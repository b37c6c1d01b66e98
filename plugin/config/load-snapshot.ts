// The whole load of a config: the file, the host's own keys, the hooks block and its mappings. All of
// it is checked before anything is used, so a config is taken whole or not at all.
import { ConfigError } from '../errors.ts';
import type { GatewayHost, SelectedConfig } from '../host.ts';
import { compileMappings } from '../mappings/compile-mappings.ts';
import { indexMappings } from '../mappings/mapping-index.ts';
import { resolveHooksConfig, selectStandaloneConfig } from './hooks-config.ts';
import { readConfigFile } from './load.ts';
import type { HooksSnapshot } from '../request/snapshot.ts';
import type { CompiledMapping } from '../mappings/mapping.ts';
import { mappingCredential } from '../auth/credentials.ts';

export interface LoadedConfig {
  snapshot: HooksSnapshot;
  selected: SelectedConfig;
  /** Applies the host's own keys of this file (from host.checkConfig); called once the config is taken. */
  applyHostConfig: () => void;
}

const NOTHING_TO_APPLY = (): void => {};

/**
 * Throws ConfigError naming every problem found, in the hooks block and in the host's keys alike.
 * `skipMappings`: mappings left out by index (the dry run leaves out those it cannot compile).
 */
export async function loadConfig(host: GatewayHost, skipMappings?: ReadonlySet<number>): Promise<LoadedConfig> {
  const file = await readConfigFile(host.configPath);
  const selected = (host.selectConfig ?? selectStandaloneConfig)(file);
  const problems: string[] = [];
  let applyHostConfig = NOTHING_TO_APPLY;
  try {
    applyHostConfig = host.checkConfig?.(file) ?? NOTHING_TO_APPLY;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  let settings;
  try {
    settings = resolveHooksConfig(selected, host.configDir, host.configPath);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError([...problems, ...err.problems], host.configPath);
  }
  const policies = { ...settings, configDir: host.configDir, gatewayToken: selected.gatewayToken };
  const compiled = await compileMappings(
    settings.mappingConfigs,
    settings.presets,
    policies,
    host,
    selected.hooksKey,
    skipMappings,
  );
  problems.push(...compiled.problems);
  if (problems.length) throw new ConfigError(problems, host.configPath);
  const mappings = Object.freeze(compiled.mappings);
  const { agentMaxConcurrentRuns, ...rest } = settings;
  const snapshot: HooksSnapshot = Object.freeze({
    ...rest,
    hookConcurrency: hookConcurrencyOf(mappings, agentMaxConcurrentRuns),
    credentials: settings.credentials.with(mappingCredentials(mappings)),
    mappings,
    mappingIndex: indexMappings(mappings),
  });
  return { snapshot, selected, applyHostConfig };
}

/** Each hook's own limit of runs at once: /hooks/agent's, and each mapping id's (the least, if shared). */
function hookConcurrencyOf(
  mappings: readonly CompiledMapping[],
  agent: number | undefined,
): ReadonlyMap<string, number> {
  const out = new Map<string, number>();
  if (agent !== undefined) out.set('agent', agent);
  for (const { id, maxConcurrentRuns } of mappings) {
    if (maxConcurrentRuns !== undefined) out.set(id, Math.min(maxConcurrentRuns, out.get(id) ?? Infinity));
  }
  return out;
}

/** What senders present as it is to the mappings: bearer, basic and GitLab secrets, Meta verify tokens. */
function* mappingCredentials(mappings: readonly CompiledMapping[]): Iterable<string> {
  for (const m of mappings) {
    if (m.matchPath === undefined) continue;
    for (const secret of m.verifier?.accepted?.() ?? [])
      yield mappingCredential(m.matchPath, m.verifier!.scheme, secret);
    if (m.handshake?.kind === 'meta') yield mappingCredential(m.matchPath, 'meta', m.handshake.accepted());
  }
}

/** The keys whose values differ between two configs (names only: values may be secrets). */
export function changedKeys(before: SelectedConfig, after: SelectedConfig): string[] {
  const out: string[] = [];
  const a = (before.hooks ?? {}) as Record<string, unknown>;
  const b = (after.hooks ?? {}) as Record<string, unknown>;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) out.push(`${after.hooksKey}.${key}`);
  }
  if (before.gatewayToken !== after.gatewayToken) out.push('gateway.auth.token');
  if (JSON.stringify(before.trustedProxies) !== JSON.stringify(after.trustedProxies))
    out.push('gateway.trustedProxies');
  return out;
}
