// `hookgate config init|check|get`: write a default config, check one as a start would, or print a
// value of it for scripts. `get` runs in scripts (`$(npx hookgate config get hooks.token)`), so it
// loads only the file reader: what `init` and `check` need is loaded when they run.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, readConfigFile } from '../../../../kits/config-file.ts';
import type { GatewaySettings } from '../../server/settings.ts';
import { resolvePaths } from '../support/state-paths.ts';
import { exists } from '../support/exists.ts';
import { print, type Command } from '../support/command.ts';
import { UsageError } from '../support/usage-error.ts';

const HELP = `Usage: hookgate config <init|check|get KEY> [--config FILE] [--state-dir DIR]

  init      Write a default config (hooks enabled, fresh hook and gateway tokens, mode 0600)
            unless the file exists.
  check     Validate the whole file; prints every problem with its key, exits 1 if any.
  get KEY   Print the value at a dotted key (e.g. hooks.token) for use in scripts.`;

async function runConfig(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { config: { type: 'string' }, 'state-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  const [sub, key] = positionals;
  if (values.help || !sub) return print(HELP);
  const { configPath } = resolvePaths(values);
  if (sub === 'init') {
    if (await exists(configPath)) return print(`${configPath} exists; left as it is.`);
    const { writeDefaultConfig } = await import('../../server/settings.ts');
    await writeDefaultConfig(configPath);
    return print(`Wrote ${configPath} (mode 0600).`);
  }
  const file = await readConfigFile(configPath);
  if (sub === 'check') {
    const [{ loadConfig, resolveHooksConfig, selectStandaloneConfig }, { gmailHookTarget, resolveGmailSettings }] =
      await Promise.all([import('../../../../kits/config.ts'), import('../../../../../gmail/index.ts')]);
    const { checkingHost, resolveGatewaySettings } = await import('../../server/settings.ts');
    const { configSummary } = await import('../support/config-summary.ts');
    // Exactly what a start checks: the gateway's keys, the hooks block and every mapping.
    let settings: GatewaySettings | undefined;
    try {
      settings = resolveGatewaySettings(file, configPath);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const hooks: string[] = [];
      try {
        resolveHooksConfig(selectStandaloneConfig(file), path.dirname(configPath), configPath);
      } catch (hooksErr) {
        if (!(hooksErr instanceof ConfigError)) throw hooksErr;
        hooks.push(...hooksErr.problems);
      }
      throw new ConfigError([...err.problems, ...hooks], configPath);
    }
    const { snapshot } = await loadConfig(checkingHost(configPath, settings));
    // With a watcher, the hook it posts to, as the gateway checks it before listening.
    if (resolveGmailSettings(file.hooks, 'hooks', configPath)) {
      gmailHookTarget(snapshot, 'http://127.0.0.1', { file: configPath });
    }
    return print(`${configPath}: OK\n\n${configSummary(snapshot)}`);
  }
  if (sub === 'get') {
    if (!key) throw new UsageError('config get needs a key, e.g. hooks.token');
    let value: unknown = file;
    for (const part of key.split('.')) {
      value =
        value !== null && typeof value === 'object' && Object.hasOwn(value, part)
          ? (value as Record<string, unknown>)[part]
          : undefined;
    }
    if (value === undefined) throw new UsageError(`${key} is not set in ${configPath}`);
    return print(typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  }
  throw new UsageError(`unknown config command "${sub}"`);
}

export const configCommand: Command = {
  help: HELP,
  run: runConfig,
};
