// What most commands start from, read once the same way: where the config and state are, the config
// file as read, and the gateway's settings from it (a problem throws ConfigError naming the key).
import { readConfigFile } from '../../../../kits/config.ts';
import { resolveGatewaySettings, type GatewaySettings } from '../../server/settings.ts';
import { resolvePaths, type Paths } from './state-paths.ts';

export interface CommandContext extends Paths {
  file: Record<string, unknown>;
  settings: GatewaySettings;
}

export async function loadContext(values: { config?: string; 'state-dir'?: string }): Promise<CommandContext> {
  const paths = resolvePaths(values);
  const file = await readConfigFile(paths.configPath);
  return { ...paths, file, settings: resolveGatewaySettings(file, paths.configPath) };
}
