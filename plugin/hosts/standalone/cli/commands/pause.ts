// `hookgate pause <name>` and `hookgate resume <name>`: the running gateway's POST
// /api/hooks/<name>/pause|resume (wake, agent or a mapping id), with the gateway token from the config.
import { parseArgs } from 'node:util';
import { localUrl } from '../../server/settings.ts';
import { UsageError } from '../support/cli-common.ts';
import { loadContext } from '../support/context.ts';
import { asRun } from '../support/command-name.ts';
import type { Command } from '../support/command.ts';
import { GATEWAY_OPTIONS_HELP } from '../support/admin-client.ts';

const helpOf = (verb: 'pause' | 'resume'): string => `Usage: hookgate ${verb} <name> [--config FILE] [--url URL]

${
  verb === 'pause'
    ? `Pauses a hook (wake, agent or a mapping id) on the running gateway: its requests are still checked,
then their actions are held on disk and answered 202 held, until \`hookgate resume <name>\`. With
hooks.sharedState the pause applies to every instance.`
    : `Resumes a paused hook on the running gateway: the actions held while it was paused are carried out
in the order they arrived (runs within hooks.maxConcurrentRuns). With hooks.sharedState the resume
applies to every instance.`
}

Options:
${GATEWAY_OPTIONS_HELP}`;

interface HookState {
  name: string;
  paused: boolean;
  held: number;
}

export function pauseCommand(verb: 'pause' | 'resume'): Command {
  return {
    help: helpOf(verb),
    async run(args) {
      const { values, positionals } = parseArgs({
        args,
        options: {
          url: { type: 'string' },
          config: { type: 'string' },
          'state-dir': { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
        allowPositionals: true,
        strict: true,
      });
      if (values.help) {
        console.log(asRun(helpOf(verb)));
        return 0;
      }
      if (positionals.length !== 1) throw new UsageError(`${verb} takes one hook name (wake, agent or a mapping id)`);
      const name = positionals[0]!;
      const { settings } = await loadContext(values);
      const base = (values.url ?? localUrl(settings.bind, settings.port)).replace(/\/+$/, '');
      const hook = await post(base, settings.gatewayToken, `/api/hooks/${encodeURIComponent(name)}/${verb}`);
      const held = `${hook.held} action${hook.held === 1 ? '' : 's'} held`;
      console.log(
        hook.paused
          ? `Hook ${hook.name} is paused (${held}).`
          : `Hook ${hook.name} is resumed${hook.held ? ` (${held}, being carried out in arrival order)` : ''}.`,
      );
      return 0;
    },
  };
}

async function post(base: string, token: string, path: string): Promise<HookState> {
  let res: Response;
  try {
    res = await fetch(base + path, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  } catch {
    throw new Error(`cannot reach the gateway at ${base} (is it running? --url sets the address)`);
  }
  const body = (await res.json().catch(() => undefined)) as (HookState & { error?: string; code?: string }) | undefined;
  if (res.status !== 200 || typeof body?.paused !== 'boolean')
    throw new Error(`the gateway at ${base} answered ${res.status}${body?.error ? `: ${body.error}` : ''}`);
  return body;
}
