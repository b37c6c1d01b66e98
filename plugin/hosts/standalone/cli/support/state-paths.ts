// Where the standalone gateway keeps its config and state, from the command line or the environment.
import { homedir } from 'node:os';
import path from 'node:path';

export interface Paths {
  configPath: string;
  stateDir: string;
}

export function resolvePaths(values: { config?: string; 'state-dir'?: string }): Paths {
  const stateDir = path.resolve(
    values['state-dir'] ?? process.env.HOOKGATE_STATE_DIR ?? path.join(homedir(), '.hookgate'),
  );
  const configPath = path.resolve(values.config ?? process.env.HOOKGATE_CONFIG ?? path.join(stateDir, 'gateway.json5'));
  return { configPath, stateDir };
}
