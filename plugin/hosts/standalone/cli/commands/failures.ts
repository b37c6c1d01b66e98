// `hookgate failures`: the runs and deliveries that failed after their last try (GET /api/failures),
// newest first, as a table: the open ones, or all with --all; of one hook with --hook. `hookgate
// failures ask <id>` asks the assistant about one (POST /api/failures/<id>/ask).
import { parseArgs } from 'node:util';
import { UsageError } from '../support/cli-common.ts';
import { loadContext } from '../support/context.ts';
import { formatTable, type Column } from '../../../../util/table.ts';
import { asRun } from '../support/command-name.ts';
import { adminClient, GATEWAY_OPTIONS, GATEWAY_OPTIONS_HELP } from '../support/admin-client.ts';

export const FAILURES_HELP = `Usage: hookgate failures [--all] [--hook NAME] [--limit N] [--config FILE] [--url URL]
       hookgate failures ask <id> [--config FILE] [--url URL]

Shows the agent runs and deliveries that failed after their last attempt, newest first: id, kind, hook,
run id, attempts, when last tried, state, and the reason. Replay one with \`hookgate replay <id>\`.
\`failures ask <id>\` tells the assistant of one (a system event in its main session naming the
failure, never its payload, and a heartbeat), so it explains what went wrong or acts.

Options:
  --all          Dismissed and replayed failures too (default: the open ones).
  --hook NAME    Only this hook's failures.
  --limit N      Show at most N (1..1000, default 50).
${GATEWAY_OPTIONS_HELP}`;

interface FailureRow {
  id: string;
  kind: string;
  hook: string;
  runId: string;
  channel?: string;
  to?: string;
  attempts: number;
  lastAt: string;
  state: string;
  replayedBy?: string;
  lastError: string;
}

const COLUMNS: readonly Column<FailureRow>[] = [
  { header: 'ID', cell: (f) => f.id },
  { header: 'KIND', cell: (f) => (f.kind === 'delivery' ? `delivery:${f.channel ?? ''}` : f.kind) },
  { header: 'HOOK', cell: (f) => f.hook, max: 24 },
  { header: 'RUN', cell: (f) => f.runId },
  { header: 'TRIES', cell: (f) => f.attempts, right: true },
  { header: 'LAST TRIED', cell: (f) => f.lastAt.slice(0, 19).replace('T', ' ') },
  { header: 'STATE', cell: (f) => (f.replayedBy ? `${f.state} → ${f.replayedBy}` : f.state), max: 48 },
  { header: 'REASON', cell: (f) => f.lastError, max: 80 },
];

export async function runFailures(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      all: { type: 'boolean' },
      hook: { type: 'string' },
      limit: { type: 'string' },
      ...GATEWAY_OPTIONS,
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    console.log(asRun(FAILURES_HELP));
    return 0;
  }
  if (positionals.length) {
    const [verb, id, ...extra] = positionals;
    if (verb !== 'ask' || !id || extra.length) throw new UsageError('give `failures ask <id>`, or no words at all');
    const { settings } = await loadContext(values);
    await adminClient(settings, values.url).call('POST', `/api/failures/${encodeURIComponent(id)}/ask`);
    console.log(`The assistant was told of failure ${id}.`);
    return 0;
  }
  const limit = values.limit ?? '50';
  if (!/^[1-9][0-9]{0,3}$/.test(limit) || Number(limit) > 1000)
    throw new UsageError(`--limit must be 1..1000, not "${limit}"`);
  const { settings } = await loadContext(values);
  const query = new URLSearchParams({ limit, state: values.all ? 'all' : 'open' });
  if (values.hook !== undefined) query.set('hook', values.hook);
  const page = (await adminClient(settings, values.url).call('GET', `/api/failures?${query}`)) as {
    failures: FailureRow[];
  };
  console.log(
    page.failures.length ? formatTable(COLUMNS, page.failures) : values.all ? 'No failures.' : 'No open failures.',
  );
  return 0;
}
