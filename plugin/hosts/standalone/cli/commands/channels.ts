// `hookgate channels check` and `hookgate channels send`: the channel credentials of a config, each
// verified with the platform's cheapest authenticated call, and one message sent by hand. Nothing
// printed carries a secret: every platform text has been through the channels' redactor.

import { parseArgs } from 'node:util';
import { loadContext } from '../support/context.ts';
import { UsageError } from '../support/cli-common.ts';

export const CHANNELS_HELP = `Usage: hookgate channels check [--config FILE]
       hookgate channels send <channel> [--to RECIPIENT] <text> [--config FILE]

  check   Verifies every configured channel credential with the platform's cheapest authenticated
          call (telegram getMe, slack auth.test, discord the webhook or users/@me, mattermost
          users/me, whatsapp the phone number, signal about and accounts, imessage server info).
          One line per channel; exits 1 if any check fails. A Teams or Mattermost webhook cannot be
          checked without posting: it is listed as unchecked.
  send    Sends one message through a channel that has credentials (split and paced like the
          gateway's deliveries) and prints the platform's message ids. --to defaults to
          channels.<name>.defaultTo.

Options:
  --config FILE  Config file. Default: $HOOKGATE_CONFIG, else <state-dir>/gateway.json5.
  --state-dir D  Default: $HOOKGATE_STATE_DIR, else ~/.hookgate.`;

export async function runChannels(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      to: { type: 'string' },
      config: { type: 'string' },
      'state-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [sub, ...rest] = positionals;
  if (values.help || sub === undefined) {
    console.log(CHANNELS_HELP);
    return 0;
  }
  const { configPath, settings } = await loadContext(values);
  const { senders } = settings.senders;
  if (sub === 'check') {
    if (values.to !== undefined) throw new UsageError('--to is for channels send');
    if (settings.channels.length === 0) {
      console.log(`No channels are configured in ${configPath}.`);
      return 0;
    }
    const width = Math.max(...settings.channels.map((c) => c.length));
    let failed = 0;
    // Checked together: one slow platform does not hold up the others' lines.
    const results = await Promise.all(
      settings.channels.map(async (name) => {
        const channel = senders.get(name);
        if (!channel) return { name, word: 'recorded', detail: 'no credentials: deliveries are only recorded' };
        const r = await channel.check(AbortSignal.timeout(60_000));
        if (!r.ok) failed++;
        return { name, word: r.ok ? (r.unverifiable ? 'unchecked' : 'ok') : 'FAILED', detail: r.detail };
      }),
    );
    for (const r of results) console.log(`${r.name.padEnd(width)}  ${r.word.padEnd(9)}  ${r.detail}`);
    return failed > 0 ? 1 : 0;
  }
  if (sub === 'send') {
    const [name, ...words] = rest;
    if (name === undefined || words.length === 0) throw new UsageError('channels send needs a channel and a text');
    const text = words.join(' ');
    const channel = senders.get(name);
    if (!channel) {
      throw new UsageError(
        settings.channels.includes(name as never)
          ? `channels.${name} has no credentials: it only records deliveries`
          : `no channel "${name}" in ${configPath}`,
      );
    }
    const result = await channel.deliver(values.to, text);
    channel.close();
    if (result.status === 'sent') {
      const ids = result.messageIds.length ? result.messageIds.join(' ') : '(the platform gives no message id)';
      console.log(`sent to ${name} in ${result.parts} part${result.parts === 1 ? '' : 's'}: ${ids}`);
      return 0;
    }
    console.error(
      `hookgate: ${name}: ${result.description}${result.sentParts ? ` (after ${result.sentParts} of ${result.parts} parts: ${result.messageIds.join(' ')})` : ''}`,
    );
    return 1;
  }
  throw new UsageError(`unknown channels command "${sub}"`);
}
