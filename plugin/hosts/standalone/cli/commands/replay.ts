// `hookgate replay`: runs a failure or a run again (POST /api/failures/<id>/replay or
// /api/runs/<runId>/replay), or every open failure since a time (POST /api/replay), through the
// running gateway, which checks today's policies.
import { parseArgs } from 'node:util';
import { UsageError } from '../support/cli-common.ts';
import { loadContext } from '../support/context.ts';
import { asRun } from '../support/command-name.ts';
import { adminClient, GATEWAY_OPTIONS, GATEWAY_OPTIONS_HELP } from '../support/admin-client.ts';

export const REPLAY_HELP = `Usage: hookgate replay <failureId|runId> [--again]
       hookgate replay --failed [--since 2h] [--hook NAME]

Runs a failure (an id from \`hookgate failures\`) or a run again as a new run, under today's policies,
and prints the new run's id. A failure or run replayed before answers that replay's run again unless
--again. With --failed, replays every open failure (since a time, of one hook).

Options:
  --again        Replay once more even though it was replayed before.
  --failed       Every open failure (with --since and --hook to narrow).
  --since WHEN   With --failed: failures last tried since WHEN, a duration back from now (90s, 30m, 2h,
                 7d) or an ISO time (2026-11-25T18:00:00Z). Default: all.
  --hook NAME    With --failed: only this hook's failures.
${GATEWAY_OPTIONS_HELP}`;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration back from now, or an ISO time as given; the gateway checks the time. */
function sinceTime(text: string, now = Date.now()): string {
  const duration = /^([1-9][0-9]{0,6})([smhd])$/.exec(text);
  if (duration) return new Date(now - Number(duration[1]) * UNIT_MS[duration[2]!]!).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T/.test(text) && Number.isFinite(Date.parse(text))) return text;
  throw new UsageError(`--since must be a duration (30m, 2h, 7d) or an ISO time, not "${text}"`);
}

export async function runReplay(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      again: { type: 'boolean' },
      failed: { type: 'boolean' },
      since: { type: 'string' },
      hook: { type: 'string' },
      ...GATEWAY_OPTIONS,
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    console.log(asRun(REPLAY_HELP));
    return 0;
  }
  if (values.failed) {
    if (positionals.length || values.again)
      throw new UsageError('--failed replays by time and hook: give no id or --again');
  } else {
    if (positionals.length !== 1) throw new UsageError('give one failure id or run id, or --failed');
    if (values.since !== undefined || values.hook !== undefined)
      throw new UsageError('--since and --hook go with --failed');
  }
  const since = values.since === undefined ? undefined : sinceTime(values.since);
  const { settings } = await loadContext(values);
  const admin = adminClient(settings, values.url);
  if (values.failed) {
    const body = { failed: true, ...(since ? { since } : {}), ...(values.hook ? { hook: values.hook } : {}) };
    const answer = (await admin.call('POST', '/api/replay', body)) as { replayed: number; runIds: string[] };
    console.log(answer.replayed ? `Replayed ${answer.replayed}: ${answer.runIds.join(' ')}` : 'Nothing to replay.');
    return 0;
  }
  const id = positionals[0]!;
  const path = `/api/${id.startsWith('fail_') ? 'failures' : 'runs'}/${encodeURIComponent(id)}/replay${values.again ? '?again=1' : ''}`;
  const answer = (await admin.call('POST', path, undefined, 202)) as { runId: string; duplicate?: boolean };
  console.log(
    answer.duplicate
      ? `Already replayed as run ${answer.runId} (--again replays it once more).`
      : `Replayed as run ${answer.runId}.`,
  );
  return 0;
}
