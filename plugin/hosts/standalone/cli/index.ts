// The `hookgate` command line: run the standalone gateway, or create, check and read its config.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../../../host-kit.ts';
import { loadConfig, readConfigFile, resolveHooksConfig, selectStandaloneConfig } from '../../../kits/config.ts';
import { resolveGmailSettings } from '../../../../gmail/index.ts';
import { resolveGatewaySettings, writeDefaultConfig, type GatewaySettings } from '../server/settings.ts';
import { startGateway } from '../server/gateway.ts';
import { GMAIL_SETUP_HELP, gmailSetupCommand } from './commands/gmail-setup.ts';
import { GMAIL_RUN_HELP, gmailRunCommand, gmailStatusCommand } from './commands/gmail-run.ts';
import { createLineLogger } from '../io/line-logger.ts';
import { resolvePaths } from './support/state-paths.ts';
import { checkingHost, UsageError } from './support/cli-common.ts';
import { configSummary } from './support/config-summary.ts';
import { REQUESTS_HELP, runRequests } from './commands/requests.ts';
import { runWebhooksTest, WEBHOOKS_TEST_HELP } from './commands/webhooks-test.ts';
import { CHANNELS_HELP, runChannels } from './commands/channels.ts';
import { asRun, commandName } from './support/command-name.ts';
import { OPENCLAW_IMPORT_HELP, openClawCommand } from './commands/openclaw-import.ts';
import { errorMessage } from '../../../util/errors.ts';

const HELP: Record<string, string> = {
  main: `hookgate — webhook ingress for an assistant gateway

Usage: hookgate <command> [options]

Commands:
  gateway         Run the standalone gateway (what \`npm start\` runs)
  config init     Write a default config with fresh tokens, if none exists
  config check    Validate a config file and report every problem
  config get KEY  Print one value of the config, e.g. hooks.token
  requests        The last hook requests as a table (--follow for new ones)
  channels check  Verify every channel credential with the platform
  channels send   Send one message through a channel
  webhooks test         Resolve a hook request as the gateway would, without any effect
  webhooks gmail setup  Connect a Gmail account (OAuth, Pub/Sub, watch, config)
  webhooks gmail run     Watch a Gmail mailbox and post new mail to /hooks/gmail
  webhooks gmail status  Show the Gmail watcher's state
  openclaw import  Move OpenClaw's built-in hooks settings into hookgate's plugin config
  help [command]  Show help for a command

Run \`hookgate help <command>\` or \`hookgate <command> --help\` for its options.`,
  gateway: `Usage: hookgate gateway [--config FILE] [--state-dir DIR] [--port N] [--host ADDR] [--no-gmail]

Runs the standalone gateway: hooks under hooks.path and the admin API under /api/.

Options:
  --config FILE     Config file (JSON5). Default: $HOOKGATE_CONFIG, else <state-dir>/gateway.json5.
                    Written with fresh tokens (mode 0600) when it does not exist.
  --state-dir DIR   Sessions, runs and outbox. Default: $HOOKGATE_STATE_DIR, else ~/.hookgate.
  --port N          Port (0 = any free port). Default: gateway.port, else 18789.
  --host ADDR       Address to bind. Default: gateway.bind, else 127.0.0.1.
  --no-gmail        Do not run the Gmail watcher here even though hooks.gmail.account is set
                    (run \`hookgate webhooks gmail run\` elsewhere instead).

Prints "listening on http://<host>:<port>" once ready. SIGTERM or SIGINT stops it cleanly.`,
  config: `Usage: hookgate config <init|check|get KEY> [--config FILE] [--state-dir DIR]

  init      Write a default config (hooks enabled, fresh hook and gateway tokens, mode 0600)
            unless the file exists.
  check     Validate the whole file; prints every problem with its key, exits 1 if any.
  get KEY   Print the value at a dotted key (e.g. hooks.token) for use in scripts.`,
  requests: REQUESTS_HELP,
  channels: CHANNELS_HELP,
  openclaw: OPENCLAW_IMPORT_HELP,
  webhooks: `Usage: hookgate webhooks <test|gmail> …

${WEBHOOKS_TEST_HELP}

Gmail notifications into /hooks/gmail, over Google's APIs (no gcloud needed).

${GMAIL_SETUP_HELP}

${GMAIL_RUN_HELP}`,
};

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

async function runGateway(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string' },
      'state-dir': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'no-gmail': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return print(HELP.gateway!);
  const paths = resolvePaths(values);
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`--port must be 0..65535, not "${values.port}"`);
  }
  let created = false;
  if (!(await exists(paths.configPath))) {
    await writeDefaultConfig(paths.configPath);
    created = true;
  }
  const logger = createLineLogger();
  const gw = await startGateway({ ...paths, port, host: values.host, logger, gmail: !values['no-gmail'] });
  const hooksPath = gw.plugin.snapshot().path;
  if (created) {
    console.log(`Wrote a new config with fresh hook and gateway tokens to ${paths.configPath} (mode 0600).`);
    console.log('Try it:');
    console.log(`  HOOK_TOKEN=$(${commandName()} config get hooks.token --config '${paths.configPath}')`);
    console.log(
      `  curl -s ${gw.url}${hooksPath}/wake -H "Authorization: Bearer $HOOK_TOKEN" -d '{"text":"Hello from curl"}'`,
    );
  }
  console.log(`listening on ${gw.url}`);

  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      logger.info('shutting down', { signal });
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await gw.close();
  logger.info('stopped');
  await logger.close();
  return 0;
}

async function runConfig(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { config: { type: 'string' }, 'state-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  const [sub, key] = positionals;
  if (values.help || !sub) return print(HELP.config!);
  const { configPath } = resolvePaths(values);
  if (sub === 'init') {
    if (await exists(configPath)) return print(`${configPath} exists; left as it is.`);
    await writeDefaultConfig(configPath);
    return print(`Wrote ${configPath} (mode 0600).`);
  }
  const file = await readConfigFile(configPath);
  if (sub === 'check') {
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
    resolveGmailSettings(file.hooks, 'hooks', configPath);
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

async function runWebhooks(args: string[]): Promise<number> {
  const [kind, sub, ...rest] = args;
  if (kind === 'test') return runWebhooksTest(args.slice(1));
  if (kind !== 'gmail' || sub === undefined || sub === '--help' || sub === '-h') {
    if (kind !== undefined && kind !== 'gmail' && !kind.startsWith('-'))
      throw new UsageError(`unknown webhooks command "${kind}"`);
    return print(HELP.webhooks!);
  }
  if (sub === 'setup') return gmailSetupCommand(rest);
  if (sub === 'run') return gmailRunCommand(rest);
  if (sub === 'status') return gmailStatusCommand(rest);
  throw new UsageError(`unknown webhooks gmail command "${sub}"`);
}

function print(text: string): number {
  console.log(asRun(text));
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (!command || command === '--help' || command === '-h') return print(HELP.main!);
    if (command === 'help') return print(HELP[rest[0] ?? 'main'] ?? HELP.main!);
    if (command === 'gateway') return await runGateway(rest);
    if (command === 'config') return await runConfig(rest);
    if (command === 'requests') return await runRequests(rest);
    if (command === 'channels') return await runChannels(rest);
    if (command === 'webhooks') return await runWebhooks(rest);
    if (command === 'openclaw') return await openClawCommand(rest);
    throw new UsageError(`unknown command "${command}"`);
  } catch (err) {
    if (err instanceof ConfigError) console.error(err.message);
    else if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`hookgate: ${(err as Error).message}\nRun \`${commandName()} --help\` for usage.`);
      return 2;
    } else console.error(`hookgate: ${errorMessage(err)}`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
