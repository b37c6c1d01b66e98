// The `hookgate` command line: a table of commands; this file only routes argv to one of them and
// turns what it throws into an exit code (1 failed, 2 wrong usage). A command's module is loaded when
// it runs: the main help needs none of them and `config get` only its own, where loading every
// command's modules was most of a short command's time (docs/performance.md).
import { ConfigError } from '../../../kits/config-file.ts';
import { errorMessage } from '../../../util/errors.ts';
import { UsageError } from './support/usage-error.ts';
import { commandName } from './support/command-name.ts';
import { print, type CommandEntry } from './support/command.ts';

const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'gateway',
    summary: '  gateway         Run the standalone gateway (what `npm start` runs)',
    load: async () => (await import('./commands/gateway-command.ts')).gatewayCommand,
  },
  {
    name: 'config',
    summary: [
      '  config init     Write a default config with fresh tokens, if none exists',
      '  config check    Validate a config file and report every problem',
      '  config get KEY  Print one value of the config, e.g. hooks.token',
    ].join('\n'),
    load: async () => (await import('./commands/config-command.ts')).configCommand,
  },
  {
    name: 'requests',
    summary: '  requests        The request log as a table, filtered and paged (--follow for new ones)',
    load: async () => {
      const m = await import('./commands/requests.ts');
      return { help: m.REQUESTS_HELP, run: m.runRequests };
    },
  },
  {
    name: 'runs',
    summary: '  runs            The latest hook runs: status, hook, tries, reply and delivery (--status, --hook)',
    load: async () => {
      const m = await import('./commands/runs.ts');
      return { help: m.RUNS_HELP, run: m.runRuns };
    },
  },
  {
    name: 'failures',
    summary: '  failures        Runs and deliveries that failed after their last attempt (--all, --hook; ask ID)',
    load: async () => {
      const m = await import('./commands/failures.ts');
      return { help: m.FAILURES_HELP, run: m.runFailures };
    },
  },
  {
    name: 'replay',
    summary: '  replay          Run a failure or a run again (or --failed since a time)',
    load: async () => {
      const m = await import('./commands/replay.ts');
      return { help: m.REPLAY_HELP, run: m.runReplay };
    },
  },
  {
    name: 'channels',
    summary: [
      '  channels check  Verify every channel credential with the platform',
      '  channels send   Send one message through a channel',
    ].join('\n'),
    load: async () => {
      const m = await import('./commands/channels.ts');
      return { help: m.CHANNELS_HELP, run: m.runChannels };
    },
  },
  {
    name: 'webhooks',
    summary: [
      '  webhooks test         Resolve a hook request as the gateway would, without any effect',
      '  webhooks gmail setup  Connect a Gmail account (OAuth, Pub/Sub, watch, config)',
      '  webhooks gmail run     Watch a Gmail mailbox and post new mail to /hooks/gmail',
      "  webhooks gmail status  Show the Gmail watcher's state",
    ].join('\n'),
    load: async () => (await import('./commands/webhooks-command.ts')).webhooksCommand,
  },
  {
    name: 'pause',
    summary: "  pause <name>    Hold a hook's actions (wake, agent or a mapping id) until it is resumed",
    load: async () => (await import('./commands/pause.ts')).pauseCommand('pause'),
  },
  {
    name: 'resume',
    summary: "  resume <name>   Carry out a paused hook's held actions in arrival order and take new ones again",
    load: async () => (await import('./commands/pause.ts')).pauseCommand('resume'),
  },
  {
    name: 'openclaw',
    summary: "  openclaw import  Move OpenClaw's built-in hooks settings into hookgate's plugin config",
    load: async () => {
      const m = await import('./commands/openclaw-import.ts');
      return { help: m.OPENCLAW_IMPORT_HELP, run: m.openClawCommand };
    },
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
    if (name === 'help') {
      const entry = COMMANDS.find((c) => c.name === rest[0]);
      return print(entry ? (await entry.load()).help : MAIN_HELP);
    }
    const entry = COMMANDS.find((c) => c.name === name);
    if (!entry) throw new UsageError(`unknown command "${name}"`);
    return await (await entry.load()).run(rest);
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
