// `hookgate webhooks test <name> --payload FILE [--header k:v]…`: what the gateway would do with a
// hook request, through the same resolution as the live path (the core's dryRun), with no effect:
// no session, run, dedupe key, limiter entry or file. Exits 1 with the refusal's code when the
// gateway would refuse the request.
import { readFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { parseArgs } from 'node:util';
import { dryRun, loadConfig, readConfigFile, TransformRunner, type DryRunResult } from '../../../host-kit.ts';
import { resolveGatewaySettings } from '../config.ts';
import { checkingHost, UsageError } from './cli-common.ts';
import { resolvePaths } from '../state-paths.ts';
import { formatTable, printable } from './table.ts';
import { asRun } from './command-name.ts';

export const WEBHOOKS_TEST_HELP = `Usage: hookgate webhooks test <name> --payload FILE [--header k:v]... [--query Q] [--config FILE]

Resolves POST <hooks.path>/<name> with the body in FILE exactly as the gateway would: the mapping that
owns it, the signature check (when the mapping is signed and its signature headers are given), the
transform's output, the action with every policy applied, and the idempotency key it would be
deduplicated by. Nothing is carried out: no session, run, dedupe key or file is written, and the
hook token is not asked for. Exits 1 and prints the error code when the gateway would refuse it.

Options:
  --payload FILE   The request body, as the sender sends it (the signature covers these bytes).
  --header k:v     A request header; repeat for more (e.g. x-hub-signature-256:sha256=...).
  --query Q        The query string, without '?'.
  --config FILE    Config file. Default: $HOOKGATE_CONFIG, else <state-dir>/gateway.json5.
  --state-dir D    Default: $HOOKGATE_STATE_DIR, else ~/.hookgate.`;

/** `webhooks test …`, given what follows `test`. */
export async function runWebhooksTest(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      payload: { type: 'string' },
      header: { type: 'string', multiple: true },
      query: { type: 'string' },
      config: { type: 'string' },
      'state-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [name, ...extra] = positionals;
  if (values.help) {
    console.log(asRun(WEBHOOKS_TEST_HELP));
    return 0;
  }
  if (!name || extra.length) throw new UsageError('webhooks test needs exactly one hook name, e.g. github');
  if (!values.payload) throw new UsageError('webhooks test needs --payload FILE');
  const headers = parseHeaders(values.header ?? []);
  const body = await readFile(values.payload);

  const { configPath } = resolvePaths(values);
  const settings = resolveGatewaySettings(await readConfigFile(configPath), configPath);
  const host = checkingHost(configPath, settings);
  const { snapshot } = await loadConfig(host);
  // One worker, stopped at once when the call is done: the transform runs as it would in the gateway.
  const transforms = new TransformRunner({ timeoutMs: snapshot.transformTimeoutMs, workers: 1 });
  let result: DryRunResult;
  try {
    result = await dryRun({ name, headers, body, query: values.query }, snapshot, host, transforms);
  } finally {
    await transforms.close();
  }
  console.log(report(result));
  return result.refusal ? 1 : 0;
}

/** "k:v" pairs as Node would hand them to the gateway: names in lower case, repeats joined. */
function parseHeaders(pairs: readonly string[]): IncomingHttpHeaders {
  const headers: Record<string, string> = {};
  for (const pair of pairs) {
    const colon = pair.indexOf(':');
    const key = colon > 0 ? pair.slice(0, colon).trim().toLowerCase() : '';
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key)) throw new UsageError(`--header needs name:value, not "${pair}"`);
    const value = pair.slice(colon + 1).trim();
    headers[key] = headers[key] === undefined ? value : `${headers[key]}, ${value}`;
  }
  return headers;
}

const json = (value: unknown): string => JSON.stringify(value, null, 2);

function report(r: DryRunResult): string {
  const out: string[] = [];
  const row = (label: string, value: string): void => {
    out.push(`${label.padEnd(14)}${value}`);
  };
  row('target', r.target ?? '(none)');
  if (r.verification) row('verification', r.verification);
  for (const t of r.transforms) {
    if (t.ok) row('transform', t.value === null ? 'returned null: the request is skipped (204)' : json(t.value));
    else row('transform', `failed: ${t.reason}${t.detail ? ` (${printable(t.detail)})` : ''}`);
  }
  if (r.wakes.length) {
    out.push('', 'wake events');
    out.push(
      formatTable(
        [
          { header: 'HOOK', cell: (w: DryRunResult['wakes'][number]) => w.hook },
          { header: 'MODE', cell: (w) => w.mode },
          { header: 'TEXT', cell: (w) => w.text, max: 120 },
        ],
        r.wakes,
      ),
    );
  }
  if (r.jobs.length) {
    out.push('', 'agent runs');
    out.push(
      formatTable(
        [
          { header: 'NAME', cell: (j: DryRunResult['jobs'][number]) => j.name },
          { header: 'AGENT', cell: (j) => j.agentId },
          { header: 'SESSION', cell: (j) => j.sessionKey },
          { header: 'MODEL', cell: (j) => j.model ?? '(default)' },
          { header: 'DELIVER', cell: (j) => (j.deliver ? `${j.channel}${j.to ? ` ${j.to}` : ''}` : 'no') },
          { header: 'WAKE', cell: (j) => j.wakeMode },
          { header: 'TIMEOUT', cell: (j) => `${j.timeoutMs / 1000} s`, right: true },
        ],
        r.jobs,
      ),
    );
    for (const j of r.jobs) out.push('', `prompt of ${j.name}:`, j.prompt);
  }
  if (!r.refusal) {
    out.push('');
    row(
      'dedupe key',
      r.dedupeKeys.length ? r.dedupeKeys.map((k) => `${k.scope} ${k.key}`).join('\n' + ' '.repeat(14)) : '(none)',
    );
    row('answer', `${r.answer!.status}${r.answer!.body ? ` ${JSON.stringify(r.answer!.body)}` : ''}`);
    row('effect', 'none (dry run)');
  } else {
    out.push('');
    row('refused', `${r.refusal.status} ${r.refusal.code}: ${r.refusal.message}`);
  }
  return out.join('\n');
}
