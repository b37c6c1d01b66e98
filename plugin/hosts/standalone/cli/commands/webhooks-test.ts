// `hookgate webhooks test <name> --payload FILE [--header k:v]…`: what the gateway would do with a
// hook request, through the same resolution as the live path (the core's dryRun), with no effect:
// no session, run, dedupe key, limiter entry or file. Exits 1 with the refusal's code when the
// gateway would refuse the request.
import { readFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { dryRun, loadForDryRun, readPausedHooks, TransformRunner, type DryRunResult } from '../../../../kits/config.ts';
import { dryRunJson, dryRunReport } from '../../../../kits/dry-run.ts';
import { checkingHost } from '../../server/settings.ts';
import { UsageError } from '../support/cli-common.ts';
import { loadContext } from '../support/context.ts';
import { asRun } from '../support/command-name.ts';

export const WEBHOOKS_TEST_HELP = `Usage: hookgate webhooks test <name> --payload FILE [--header k:v]... [--query Q] [--source IP] [--json] [--config FILE]

Resolves POST <hooks.path>/<name> with the body in FILE exactly as the gateway would: the mapping that
owns it (or, when filters take nothing, that it is ignored and the condition each mapping failed), the
source allowlists (with --source) and the rate limit (named, never counted), the signature check (when
the mapping is signed and its signature headers are given), the transform's output, the action with every policy applied, every rendered text in full (the
untrusted-content wrapper shown once), the idempotency key it would be deduplicated by, and whether its
hook is paused (read from the gateway's pauses file: its action would be held). Nothing is
carried out: no session, run, dedupe key or file is written, and the hook token is not asked for.
Exits 1 and prints the error code when the gateway would refuse it. A mapping whose "\${NAME}" is unset
in this shell fails its own dry run, naming the variable; the others can still be tried.

Options:
  --payload FILE   The request body, as the sender sends it (the signature covers these bytes).
  --header k:v     A request header; repeat for more (e.g. x-hub-signature-256:sha256=...).
  --query Q        The query string, without '?'.
  --source IP      The client address to try the source allowlists with (as the gateway resolves it).
  --json           One JSON object on stdout, for scripts.
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
      source: { type: 'string' },
      json: { type: 'boolean' },
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

  const { configPath, settings, stateDir } = await loadContext(values);
  // The gateway's pauses file: written before a pause or resume is answered, and by every instance
  // when the pause is shared, so it is the live state, read with no token and no running gateway.
  const paused = await readPausedHooks(path.join(stateDir, 'data', 'after', 'pauses.jsonl'));
  const host = checkingHost(configPath, settings);
  const { snapshot, unavailable } = await loadForDryRun(host);
  // One worker, stopped at once when the call is done: the transform runs as it would in the gateway.
  const transforms = new TransformRunner({ timeoutMs: snapshot.transformTimeoutMs, workers: 1 });
  let result: DryRunResult;
  try {
    result = await dryRun(
      { name, headers, body, query: values.query, paused, source: values.source },
      snapshot,
      host,
      transforms,
      unavailable,
    );
  } finally {
    await transforms.close();
  }
  console.log(values.json ? JSON.stringify(dryRunJson(result), null, 2) : dryRunReport(result));
  return result.refusal || result.unavailable ? 1 : 0;
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
