// createHooksPlugin(host): the host-agnostic webhook ingress. The host routes HTTP requests to
// handle(); the plugin answers the ones under hooks.path and leaves the rest alone.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError } from './errors.ts';
import type { GatewayHost } from './host.ts';
import { readConfigFile } from './config/load.ts';
import { resolveHooksConfig, selectStandaloneConfig, type HooksSnapshot } from './config/resolve.ts';
import { AuthFailureLimiter } from './auth/limiter.ts';
import { RunService } from './actions/run-service.ts';
import { handleHookRequest } from './http/pipeline.ts';
import { resolveMappings } from './mappings/resolve.ts';
import { TransformRunner } from './mappings/transform-runner.ts';

export type { GatewayHost } from './host.ts';
export type { HooksSnapshot } from './config/resolve.ts';
export { ConfigError, HookError } from './errors.ts';

export interface HooksPlugin {
  /** Answers requests under hooks.path and resolves true; resolves false for anything else. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Re-reads the config file. A bad config keeps the last good one and is returned (and logged). */
  reload(): Promise<{ ok: true } | { ok: false; error: ConfigError }>;
  /** The snapshot new requests see. */
  snapshot(): HooksSnapshot;
  /** Stops taking runs, lets running ones finish for up to graceMs, interrupts the rest. */
  close(graceMs?: number): Promise<void>;
  readonly runs: { readonly queued: number; readonly running: number };
  readonly limiter: AuthFailureLimiter;
}

export async function loadSnapshot(host: GatewayHost): Promise<HooksSnapshot> {
  const file = await readConfigFile(host.configPath);
  const selected = (host.selectConfig ?? selectStandaloneConfig)(file);
  const base = resolveHooksConfig(selected, host.configDir, host.configPath);
  const { mappings, problems } = await resolveMappings(base.mappingConfigs, base.presets, base, host, selected.hooksKey);
  if (problems.length) throw new ConfigError(problems, host.configPath);
  return Object.freeze({ ...base, mappings: Object.freeze(mappings) });
}

/** Throws ConfigError (naming the key) when the config cannot start. */
export async function createHooksPlugin(host: GatewayHost): Promise<HooksPlugin> {
  let current = await loadSnapshot(host);
  const limiter = new AuthFailureLimiter();
  const runs = new RunService(host, () => current);
  const transforms = new TransformRunner({ timeoutMs: current.transformTimeoutMs, logger: host.logger });
  const deps = { host, limiter, runs, transforms };

  return {
    // Each request reads `current` once, so a swap never changes the config under a request in flight.
    handle: (req, res) => handleHookRequest(req, res, current, deps),
    async reload() {
      try {
        current = await loadSnapshot(host);
        transforms.setTimeoutMs(current.transformTimeoutMs);
        transforms.invalidate();
        return { ok: true };
      } catch (err) {
        const error = err instanceof ConfigError ? err : new ConfigError([String(err)], host.configPath);
        host.logger.error('config reload refused; keeping the last good config', { reason: error.message });
        return { ok: false, error };
      }
    },
    snapshot: () => current,
    async close(graceMs = 5000) {
      await runs.close(graceMs);
      await transforms.close();
    },
    runs,
    limiter,
  };
}
