// `hookgate runs`: the latest hook runs of the gateway process (GET /api/runs) as a table, newest page
// first and oldest first within it: status, hook, tries, the next try, the reply and its delivery;
// filtered by status and hook by the gateway, paged with --before.
import { parseArgs } from 'node:util';
import { UsageError } from '../support/cli-common.ts';
import { loadContext } from '../support/context.ts';
import { formatTable, type Column } from '../../../../util/table.ts';
import { asRun } from '../support/command-name.ts';
import { adminClient, GATEWAY_OPTIONS, GATEWAY_OPTIONS_HELP } from '../support/admin-client.ts';

export const RUNS_HELP = `Usage: hookgate runs [--status S] [--hook NAME] [--before CURSOR] [--limit N] [--config FILE] [--url URL]

Shows the latest hook runs of the running gateway (its last 10,000): when accepted, run id, hook,
status, tries, the next try (while retrying), the reply (visible, silent or none) and its delivery,
the request that started it, and the error. Never the prompt or the reply's text (\`GET
/api/runs/<id>\` shows the reply). When older runs match, the last line gives the --before that
shows them.

Options:
  --status S       Only runs in this status: queued, running, retrying, ok, error or timeout.
  --hook NAME      Only runs of this hook: wake, agent or a mapping id.
  --before CURSOR  The page before this cursor.
  --limit N        Show at most N (1..1000, default 50).
${GATEWAY_OPTIONS_HELP}`;

interface RunRow {
  runId: string;
  hook: string;
  status: string;
  at: string;
  requestId?: string;
  attempts?: unknown[];
  nextAttemptAt?: string;
  reply?: string;
  delivery?: { status: string; channel?: string; to?: string };
  error?: string;
}

const COLUMNS: readonly Column<RunRow>[] = [
  { header: 'ACCEPTED', cell: (r) => r.at.slice(0, 19).replace('T', ' ') },
  { header: 'RUN', cell: (r) => r.runId },
  { header: 'HOOK', cell: (r) => r.hook, max: 24 },
  { header: 'STATUS', cell: (r) => r.status },
  { header: 'TRIES', cell: (r) => r.attempts?.length ?? 1, right: true },
  { header: 'NEXT TRY', cell: (r) => r.nextAttemptAt?.slice(11, 19) },
  { header: 'REPLY', cell: (r) => r.reply },
  {
    header: 'DELIVERY',
    cell: (r) => r.delivery && [r.delivery.status, r.delivery.channel, r.delivery.to].filter(Boolean).join(' '),
    max: 32,
  },
  { header: 'REQUEST', cell: (r) => r.requestId },
  { header: 'ERROR', cell: (r) => r.error, max: 60 },
];

export async function runRuns(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      status: { type: 'string' },
      hook: { type: 'string' },
      before: { type: 'string' },
      limit: { type: 'string' },
      ...GATEWAY_OPTIONS,
    },
    strict: true,
  });
  if (values.help) {
    console.log(asRun(RUNS_HELP));
    return 0;
  }
  const limit = values.limit ?? '50';
  if (!/^[1-9][0-9]{0,3}$/.test(limit) || Number(limit) > 1000)
    throw new UsageError(`--limit must be 1..1000, not "${limit}"`);
  const { settings } = await loadContext(values);
  const query = new URLSearchParams({ limit });
  for (const name of ['status', 'hook', 'before'] as const) {
    if (values[name] !== undefined) query.set(name, values[name]);
  }
  const page = (await adminClient(settings, values.url).call('GET', `/api/runs?${query}`)) as {
    runs: RunRow[];
    before?: string;
  };
  console.log(page.runs.length ? formatTable(COLUMNS, page.runs) : 'No hook runs.');
  if (page.before !== undefined) console.log(`older: --before ${page.before}`);
  return 0;
}
