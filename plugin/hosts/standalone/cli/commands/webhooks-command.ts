// `hookgate webhooks test|gmail …`: the dry run of a hook request, and the Gmail bridge's commands.
import { GMAIL_SETUP_HELP, gmailSetupCommand } from './gmail-setup.ts';
import { GMAIL_RUN_HELP, gmailRunCommand, gmailStatusCommand } from './gmail-run.ts';
import { runWebhooksTest, WEBHOOKS_TEST_HELP } from './webhooks-test.ts';
import { print, type Command } from '../support/command.ts';
import { UsageError } from '../support/cli-common.ts';

const HELP = `Usage: hookgate webhooks <test|gmail> …

${WEBHOOKS_TEST_HELP}

Gmail notifications into /hooks/gmail, over Google's APIs (no gcloud needed).

${GMAIL_SETUP_HELP}

${GMAIL_RUN_HELP}`;

async function runWebhooks(args: string[]): Promise<number> {
  const [kind, sub, ...rest] = args;
  if (kind === 'test') return runWebhooksTest(args.slice(1));
  if (kind !== 'gmail' || sub === undefined || sub === '--help' || sub === '-h') {
    if (kind !== undefined && kind !== 'gmail' && !kind.startsWith('-'))
      throw new UsageError(`unknown webhooks command "${kind}"`);
    return print(HELP);
  }
  if (sub === 'setup') return gmailSetupCommand(rest);
  if (sub === 'run') return gmailRunCommand(rest);
  if (sub === 'status') return gmailStatusCommand(rest);
  throw new UsageError(`unknown webhooks gmail command "${sub}"`);
}

export const webhooksCommand: Command = {
  help: HELP,
  run: runWebhooks,
};
