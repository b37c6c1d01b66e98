// `hookgate gateway`: run the standalone gateway until SIGTERM or SIGINT, writing a default config
// with fresh tokens first when there is none.
import { parseArgs } from 'node:util';
import { startGateway, type RunningGateway } from '../../server/gateway.ts';
import { collectWhenIdle } from '../../server/idle-collect.ts';
import { ConfigError } from '../../../../host-kit.ts';
import { errorMessage } from '../../../../util/errors.ts';
import { writeDefaultConfig } from '../../server/settings.ts';
import { createLineLogger } from '../../io/line-logger.ts';
import { resolvePaths } from '../support/state-paths.ts';
import { commandName } from '../support/command-name.ts';
import { exists } from '../support/exists.ts';
import { print, type Command } from '../support/command.ts';
import { UsageError } from '../support/cli-common.ts';

const HELP = `Usage: hookgate gateway [--config FILE] [--state-dir DIR] [--port N] [--host ADDR] [--role ROLE] [--no-gmail]

Runs the standalone gateway: hooks under hooks.path and the admin API under /api/.

Options:
  --config FILE     Config file (JSON5). Default: $HOOKGATE_CONFIG, else <state-dir>/gateway.json5.
                    Written with fresh tokens (mode 0600) when it does not exist.
  --state-dir DIR   Sessions, runs and outbox. Default: $HOOKGATE_STATE_DIR, else ~/.hookgate.
  --port N          Port (0 = any free port). Default: gateway.port, else 18789.
  --host ADDR       Address to bind. Default: gateway.bind, else 127.0.0.1.
  --role ROLE       With hooks.queue: "ingress" (a door: accepts and queues only) or "assistant"
                    (takes from the queue and carries actions out). Default: gateway.role, else
                    assistant.
  --no-gmail        Do not run the Gmail watcher here even though hooks.gmail.account is set
                    (run \`hookgate webhooks gmail run\` elsewhere instead).

Prints "listening on http://<host>:<port>" once ready. SIGTERM or SIGINT stops it cleanly.`;

async function runGateway(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string' },
      'state-dir': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      role: { type: 'string' },
      'no-gmail': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return print(HELP);
  const paths = resolvePaths(values);
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`--port must be 0..65535, not "${values.port}"`);
  }
  const role = values.role;
  if (role !== undefined && role !== 'ingress' && role !== 'assistant')
    throw new UsageError(`--role must be ingress or assistant, not "${role}"`);
  let created = false;
  if (!(await exists(paths.configPath))) {
    await writeDefaultConfig(paths.configPath);
    created = true;
  }
  const logger = createLineLogger();
  let gw: RunningGateway;
  try {
    gw = await startGateway({ ...paths, port, host: values.host, logger, gmail: !values['no-gmail'], role });
  } catch (err) {
    // The warnings logged before the failure go out first; the failure is the last line.
    await logger.close();
    if (err instanceof ConfigError) throw err;
    throw new Error(`cannot start: ${errorMessage(err)}`, { cause: err });
  }
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
  // The process is the gateway's own here (an embedding process keeps its own heap in hand).
  const idle = collectWhenIdle(logger);

  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      logger.info('shutting down', { signal });
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  idle.stop();
  await gw.close();
  logger.info('stopped');
  await logger.close();
  return 0;
}

export const gatewayCommand: Command = {
  help: HELP,
  run: runGateway,
};
