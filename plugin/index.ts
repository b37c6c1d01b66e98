// createHooksPlugin(host): the host-agnostic webhook ingress. The host routes HTTP requests to
// handle(); the plugin answers the ones under hooks.path and leaves the rest alone.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError } from './errors.ts';
import type { GatewayHost, SelectedConfig } from './host.ts';
import { readConfigFile } from './config/load.ts';
import { resolveHooksConfig, selectStandaloneConfig, type HooksSnapshot } from './config/resolve.ts';
import { watchConfig, type ConfigWatcher, type WatchChange } from './config/watch.ts';
import { AuthFailureLimiter } from './auth/limiter.ts';
import { RefusalLog } from './http/refusal-log.ts';
import { RunService } from './actions/run-service.ts';
import { handleHookRequest } from './http/pipeline.ts';
import { resolveMappings } from './mappings/resolve.ts';
import { TransformRunner } from './mappings/transform-runner.ts';

export type { GatewayHost } from './host.ts';
export type { HooksSnapshot } from './config/resolve.ts';
export { ConfigError, HookError } from './errors.ts';

export interface HooksPluginOptions {
  /** Follow changes of the config file and the transforms dir (hot reload). */
  watch?: boolean;
  /** Told of every config file the plugin accepted on reload, so the host can follow its own keys. */
  onReloaded?(file: Record<string, unknown>): void;
}

export type ReloadResult = { ok: true; changed: string[] } | { ok: false; error: ConfigError };

export interface HooksPlugin {
  /** Answers requests under hooks.path and resolves true; resolves false for anything else. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Re-reads the config file. A bad config keeps the last good one and is returned (and logged). */
  reload(): Promise<ReloadResult>;
  /** The snapshot new requests see. */
  snapshot(): HooksSnapshot;
  /** Resolves once the watcher (if any) reports changes. */
  watching(): Promise<void>;
  /** Stops watching and taking runs, lets running ones finish for up to graceMs, interrupts the rest. */
  close(graceMs?: number): Promise<void>;
  readonly runs: { readonly queued: number; readonly running: number };
  readonly limiter: AuthFailureLimiter;
}

interface Loaded {
  snapshot: HooksSnapshot;
  selected: SelectedConfig;
  file: Record<string, unknown>;
}

async function load(host: GatewayHost): Promise<Loaded> {
  const file = await readConfigFile(host.configPath);
  const selected = (host.selectConfig ?? selectStandaloneConfig)(file);
  const base = resolveHooksConfig(selected, host.configDir, host.configPath);
  const { mappings, problems } = await resolveMappings(base.mappingConfigs, base.presets, base, host, selected.hooksKey);
  if (problems.length) throw new ConfigError(problems, host.configPath);
  return { snapshot: Object.freeze({ ...base, mappings: Object.freeze(mappings) }), selected, file };
}

export async function loadSnapshot(host: GatewayHost): Promise<HooksSnapshot> {
  return (await load(host)).snapshot;
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
  if (JSON.stringify(before.trustedProxies) !== JSON.stringify(after.trustedProxies)) out.push('gateway.trustedProxies');
  return out;
}

/** Throws ConfigError (naming the key) when the config cannot start. */
export async function createHooksPlugin(host: GatewayHost, options: HooksPluginOptions = {}): Promise<HooksPlugin> {
  let loaded = await load(host);
  let current = loaded.snapshot;
  const limiter = new AuthFailureLimiter();
  const runs = new RunService(host, () => current);
  const transforms = new TransformRunner({ timeoutMs: current.transformTimeoutMs, logger: host.logger });
  const refusals = new RefusalLog(host.logger);
  const deps = { host, limiter, refusals, runs, transforms };

  // One reload at a time; a change arriving meanwhile gives one more reload after it.
  let reloading: Promise<ReloadResult> | undefined;
  let again = false;
  const reloadOnce = async (): Promise<ReloadResult> => {
    try {
      const next = await load(host);
      const changed = changedKeys(loaded.selected, next.selected);
      loaded = next;
      current = next.snapshot;
      transforms.setTimeoutMs(current.transformTimeoutMs);
      options.onReloaded?.(next.file);
      return { ok: true, changed };
    } catch (err) {
      const error = err instanceof ConfigError ? err : new ConfigError([String(err)], host.configPath);
      return { ok: false, error };
    }
  };
  const reload = (): Promise<ReloadResult> => {
    if (reloading) {
      again = true;
      return reloading;
    }
    reloading = reloadOnce().finally(() => {
      reloading = undefined;
      if (again) {
        again = false;
        void reload();
      }
    });
    return reloading;
  };

  const onChange = async (change: WatchChange): Promise<void> => {
    // A changed module is loaded afresh by its next call.
    if (change.transforms.length) transforms.invalidate();
    const result = await reload();
    const transformsChanged = change.transforms.join(', ') || undefined;
    if (result.ok) {
      host.logger.info('config reloaded', { changed: result.changed.join(', ') || 'nothing', transforms: transformsChanged });
    } else {
      host.logger.error('config reload refused; the last good config stays in force', {
        reason: result.error.message,
        transforms: transformsChanged,
      });
    }
  };

  let watcher: ConfigWatcher | undefined;
  if (options.watch) {
    watcher = watchConfig({
      configPath: host.configPath,
      transformsRoot: current.transformsRoot,
      logger: host.logger,
      onChange: (change) => void onChange(change),
    });
  }

  return {
    // Each request reads `current` once, so a swap never changes the config under a request in flight.
    handle: (req, res) => handleHookRequest(req, res, current, deps),
    reload,
    snapshot: () => current,
    watching: () => watcher?.ready ?? Promise.resolve(),
    async close(graceMs = 5000) {
      await watcher?.close();
      await runs.close(graceMs);
      await transforms.close();
      refusals.flush();
    },
    runs,
    limiter,
  };
}
