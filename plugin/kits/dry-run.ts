// The dry run (`hookgate webhooks test`) for the CLI and the admin API alike: its report as the
// command prints it, its JSON as `--json` prints it, and `POST dry-run`, which plans a request to a
// hook of the live config exactly as the command does: nothing carried out, nothing stored, one log
// line saying a dry run was made. A host adds the route after the plugin's own (dryRunRoute).
import type { IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { refuse } from '../errors.ts';
import type { GatewayHost } from '../host.ts';
import type { HooksPlugin } from '../index.ts';
import { dryRun, type DryRunResult } from '../dry-run.ts';
import { readBudgetWindows } from '../budgets/budget-windows.ts';
import { TransformRunner } from '../transforms/index.ts';
import { unwrapExternalContent } from '../safety/index.ts';
import { formatTable, printable } from '../util/table.ts';
import type { AdminCall, AdminRoute } from '../admin/admin-call.ts';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** `POST dry-run` with `{ hook, body, headers? }` → `{ ok: true, text, plan }`. */
export function dryRunRoute(plugin: Pick<HooksPlugin, 'snapshot' | 'admin'>, host: GatewayHost): AdminRoute {
  return (call: AdminCall) => {
    if (call.parts.length !== 1 || call.parts[0] !== 'dry-run') return undefined;
    if (call.method !== 'POST') return Promise.reject(refuse.methodNotAllowed('POST', 'a dry run is asked with POST'));
    return (async () => {
      const { hook, body, headers } = dryRunBody(await call.body());
      const snapshot = plugin.snapshot();
      const hooks = (await plugin.admin({
        method: 'GET',
        parts: ['hooks'],
        query: new URLSearchParams(),
        body: async () => undefined,
      })) as {
        hooks: { name: string; paused: boolean }[];
      };
      const paused = new Set(hooks.hooks.filter((h) => h.paused).map((h) => h.name));
      // The budgets' windows as on disk (each run's count is there before its request is answered).
      const budgetWindows = host.stateDir
        ? await readBudgetWindows(path.join(host.stateDir, 'budgets.jsonl'))
        : undefined;
      // One worker, stopped when the call is done: the transform runs as it would for a request.
      const transforms = new TransformRunner({ timeoutMs: snapshot.transformTimeoutMs, workers: 1 });
      let result: DryRunResult;
      try {
        result = await dryRun(
          { name: hook, headers, body: Buffer.from(body, 'utf8'), paused, budgetWindows },
          snapshot,
          host,
          transforms,
        );
      } finally {
        await transforms.close();
      }
      host.logger.info('dry run made', { hook: hook.length > 100 ? `${hook.slice(0, 100)}…` : hook });
      return { ok: true, text: dryRunReport(result), plan: dryRunJson(result) };
    })();
  };
}

function dryRunBody(value: unknown): { hook: string; body: string; headers: IncomingHttpHeaders } {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw refuse.badRequest('the body must be a JSON object: { hook, body, headers? }');
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) {
    if (key !== 'hook' && key !== 'body' && key !== 'headers')
      throw refuse.badRequest(`unknown field ${JSON.stringify(key.slice(0, 40))}`);
  }
  if (typeof v.hook !== 'string' || v.hook === '' || v.hook.length > 200)
    throw refuse.badRequest("hook must be a hook name (wake, agent or a mapping's name)");
  if (typeof v.body !== 'string') throw refuse.badRequest('body must be the raw request body, as a string');
  const headers: Record<string, string> = {};
  if (v.headers !== undefined) {
    if (typeof v.headers !== 'object' || v.headers === null || Array.isArray(v.headers))
      throw refuse.badRequest('headers must be an object of header names and values');
    for (const [name, text] of Object.entries(v.headers as Record<string, unknown>)) {
      const key = name.trim().toLowerCase();
      if (!HEADER_NAME.test(key) || typeof text !== 'string')
        throw refuse.badRequest('headers must map header names to string values');
      headers[key] = headers[key] === undefined ? text.trim() : `${headers[key]}, ${text.trim()}`;
    }
  }
  return { hook: v.hook, body: v.body, headers };
}

const json = (value: unknown): string => JSON.stringify(value, null, 2);

/** A rendered text: the content inside the untrusted-content wrapper (when it has one) and the wrapper. */
interface Shown {
  content: string;
  wrapper?: { start: string; end: string };
}

function shown(text: string): Shown {
  const parts = unwrapExternalContent(text);
  if (!parts) return { content: text };
  return { content: parts.before + parts.content + parts.after, wrapper: { start: parts.start, end: parts.end } };
}

/** The result for scripts: every text in full, inside the wrapper and with it. */
export function dryRunJson(r: DryRunResult): unknown {
  return {
    target: r.target ?? null,
    hook: r.hook ?? null,
    verification: r.verification ?? null,
    reins: r.reins,
    spend: r.spend ?? null,
    ignored: r.ignored ?? null,
    transforms: r.transforms,
    wakes: r.wakes.map((w) => ({ ...w, content: shown(w.text).content })),
    runs: r.jobs.map((j) => ({ ...j, content: shown(j.prompt).content })),
    dedupeKeys: r.dedupeKeys,
    answer: r.answer ?? null,
    refusal: r.refusal ? { status: r.refusal.status, code: r.refusal.code, error: r.refusal.message } : null,
    unavailable: r.unavailable ?? null,
    effect: 'none (dry run)',
  };
}

/** The dry run as `hookgate webhooks test` prints it. */
export function dryRunReport(r: DryRunResult): string {
  const out: string[] = [];
  const row = (label: string, value: string): void => {
    out.push(`${label.padEnd(14)}${value}`);
  };
  if (r.unavailable) {
    row('unavailable', r.unavailable.join('\n' + ' '.repeat(14)));
    return out.join('\n');
  }
  row('target', r.target ?? '(none)');
  for (const rein of r.reins) row('door', rein);
  for (const { mapping, failed } of r.ignored ?? []) row('not taken', `${mapping}: ${failed}`);
  if (r.hook?.paused) row('paused', `yes: hook ${r.hook.name}'s action would be held until it is resumed`);
  if (r.spend) row('spend', r.spend);
  if (r.verification) row('verification', r.verification);
  for (const t of r.transforms) {
    if (t.ok) row('transform', t.value === null ? 'returned null: the request is skipped (204)' : json(t.value));
    else row('transform', `failed: ${t.reason}${t.detail ? ` (${printable(t.detail)})` : ''}`);
  }
  let wrapper: Shown['wrapper'];
  const texts: [string, Shown][] = [];
  if (r.wakes.length) {
    out.push('', 'wake events');
    out.push(
      formatTable(
        [
          { header: 'HOOK', cell: (w: DryRunResult['wakes'][number]) => w.hook },
          { header: 'MODE', cell: (w) => w.mode },
        ],
        r.wakes,
      ),
    );
    r.wakes.forEach((w, i) => texts.push([`text of wake event ${i + 1} (${w.hook})`, shown(w.text)]));
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
    r.jobs.forEach((j, i) => texts.push([`message of agent run ${i + 1} (${j.name})`, shown(j.prompt)]));
  }
  for (const [label, text] of texts) {
    wrapper ??= text.wrapper;
    out.push('', `${label}${text.wrapper ? ', inside the wrapper' : ''}:`, text.content);
  }
  if (wrapper) {
    out.push('', 'each text above reaches the agent wrapped as untrusted content (a fresh id each time):');
    out.push(`${wrapper.start}<the text>\n${wrapper.end}`);
  }
  if (r.refusal) {
    out.push('');
    row('refused', `${r.refusal.status} ${r.refusal.code}: ${r.refusal.message}`);
    return out.join('\n');
  }
  out.push('');
  row(
    'dedupe key',
    r.dedupeKeys.length ? r.dedupeKeys.map((k) => `${k.scope} ${k.key}`).join('\n' + ' '.repeat(14)) : '(none)',
  );
  row('answer', `${r.answer!.status}${r.answer!.body ? ` ${JSON.stringify(r.answer!.body)}` : ''}`);
  row('effect', 'none (dry run)');
  return out.join('\n');
}
