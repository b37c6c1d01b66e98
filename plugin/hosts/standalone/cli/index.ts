// The `hookgate` command line: a table of commands; this file only routes argv to one of them and
// turns what it throws into an exit code (1 failed, 2 wrong usage).
import { ConfigError } from '../../../host-kit.ts';
import { errorMessage } from '../../../util/errors.ts';
import { gatewayCommand } from './commands/gateway-command.ts';
import { configCommand } from './commands/config-command.ts';
import { REQUESTS_HELP, runRequests } from './commands/requests.ts';
import { CHANNELS_HELP, runChannels } from './commands/channels.ts';
import { FAILURES_HELP, runFailures } from './commands/failures.ts';
import { REPLAY_HELP, runReplay } from './commands/replay.ts';
import { webhooksCommand } from './commands/webhooks-command.ts';
import { pauseCommands } from './commands/pause.ts';
import { OPENCLAW_IMPORT_HELP, openClawCommand } from './commands/openclaw-import.ts';
import { UsageError } from './support/cli-common.ts';
import { commandName } from './support/command-name.ts';
import { print, type Command } from './support/command.ts';

const COMMANDS: readonly Command[] = [
  gatewayCommand,
  configCommand,
  {
    name: 'requests',
    summary: '  requests        The last hook requests as a table (--follow for new ones)',
    help: REQUESTS_HELP,
    run: runRequests,
  },
  {
    name: 'failures',
    summary: '  failures        Runs and deliveries that failed after their last attempt (--all, --hook)',
    help: FAILURES_HELP,
    run: runFailures,
  },
  {
    name: 'replay',
    summary: '  replay          Run a failure or a run again (or --failed since a time)',
    help: REPLAY_HELP,
    run: runReplay,
  },
  {
    name: 'channels',
    summary: [
      '  channels check  Verify every channel credential with the platform',
      '  channels send   Send one message through a channel',
    ].join('\n'),
    help: CHANNELS_HELP,
    run: runChannels,
  },
  webhooksCommand,
  ...pauseCommands,
  {
    name: 'openclaw',
    summary: "  openclaw import  Move OpenClaw's built-in hooks settings into hookgate's plugin config",
    help: OPENCLAW_IMPORT_HELP,
    run: openClawCommand,
  },
];

const MAIN_HELP = `hookgate — webhook ingress for an assistant gateway

Usage: hookgate <command> [options]

Commands:
${COMMANDS.map((c) => c.summary).join('\n')}
  help [command]  Show help for a command

Run \`hookgate help <command>\` or \`hookgate <command> --help\` for its options.`;

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  try {
    if (!name || name === '--help' || name === '-h') return print(MAIN_HELP);
    if (name === 'help') return print(COMMANDS.find((c) => c.name === rest[0])?.help ?? MAIN_HELP);
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}"`);
    return await command.run(rest);
  } catch (err) {
    if (err instanceof ConfigError) console.error(err.message);
    else if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`hookgate: ${(err as Error).message}\nRun \`${commandName()} --help\` for usage.`);
      return 2;
    } else console.error(`hookgate: ${errorMessage(err)}`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
// A command that failed ends here: whatever it had half-started (a config watcher, a timer, an open
// file) must not keep the process alive, or a gateway that failed to start would neither listen nor
// exit, and its supervisor would never restart it. Standard error is written synchronously to files
// and pipes, so the line naming the failure is out before the exit.
if (code !== 0) process.exit(code);
