// What every CLI command shares: the error that means "wrong usage" (exit 2, usage-error.ts), and a
// host that only answers what loading a config asks. Where the config and state live: state-paths.ts.
import path from 'node:path';
import type { GatewayHost } from '../../../../host.ts';
import { hostAgents, type GatewaySettings } from '../../server/settings.ts';

export { UsageError } from './usage-error.ts';

/** A host that only answers what loading a config asks (agents, channels); nothing runs. */
export function checkingHost(configPath: string, settings: GatewaySettings): GatewayHost {
  const unused = (): never => {
    throw new Error('config check runs nothing');
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
