// GET /metrics on the real gateway process: a scripted set of requests, then the exposition read by
// a real Prometheus text parser with the exact counts expected; and who may read it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sign as githubSign } from '@octokit/webhooks-methods';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import {
  eventually,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

const GITHUB_SECRET = 'metrics-github-secret-0123456789';

interface Family {
  name: string;
  type: string;
  metrics: {
    value?: string;
    labels?: Record<string, string>;
    count?: string;
    sum?: string;
    buckets?: Record<string, string>;
  }[];
}

async function scrape(gw: SpawnedGateway): Promise<string> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** One histogram series: its family's HELP and TYPE lines and the lines of that label set. */
function histogram(exposition: string, name: string, labels: string): Family {
  const lines = exposition
    .split('\n')
    .filter(
      (l) =>
        l.startsWith(`# HELP ${name} `) ||
        l.startsWith(`# TYPE ${name} `) ||
        (l.startsWith(name) && l.includes(labels)),
    );
  // Without its own labels, which the parser reads only on unlabelled histograms.
  const unlabelled = lines.map((l) => l.replace(`{${labels}}`, '').replace(`${labels},`, '').replace(`,${labels}`, ''));
  const [family] = parsePrometheusTextFormat(`${unlabelled.join('\n')}\n`) as Family[];
  return family!;
}

/** The value of one series (labels given in full), or undefined when it is absent. */
function value(families: Family[], name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.find((f) => f.name === name);
  const series = family?.metrics.find(
    (m) => JSON.stringify(Object.entries(m.labels ?? {}).sort()) === JSON.stringify(Object.entries(labels).sort()),
  );
  if (!series) return undefined;
  return Number(series.value ?? series.count);
}

function post(gw: SpawnedGateway, p: string, body: string, headers: Record<string, string>): Promise<number> {
  return fetch(gw.url + p, { method: 'POST', headers, body }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });
}

const bearer = (token: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...extra });

describe('GET /metrics after a scripted set of requests', () => {
  let gw: SpawnedGateway;
  let text: string;
  let families: Family[];

  before(async () => {
    const stateDir = await tempStateDir();
    await mkdir(path.join(stateDir, 'hooks', 'transforms'), { recursive: true });
    await writeFile(path.join(stateDir, 'hooks', 'transforms', 'spin.mjs'), 'export default () => { for (;;) {} };\n');
    await writeFile(
      path.join(stateDir, 'hooks', 'transforms', 'echo.mjs'),
      'export default ({ payload }) => ({ text: payload.t });\n',
    );
    await writeConfig(stateDir, {
      hooks: {
        authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
        transformTimeoutMs: 300,
        mappings: [
          { id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'CI {{status}}' },
          { id: 'tr', match: { path: 'tr' }, action: 'wake', transform: { module: 'echo.mjs' } },
          { id: 'spin', match: { path: 'spin' }, action: 'wake', transform: { module: 'spin.mjs' } },
          {
            id: 'github',
            match: { path: 'github' },
            action: 'wake',
            textTemplate: 'push',
            verify: { scheme: 'github', secret: GITHUB_SECRET },
          },
        ],
      },
    });
    gw = await spawnGateway(stateDir);
    const json = { 'content-type': 'application/json' };
    const wake = '{"text":"hello","mode":"next-heartbeat"}';
    assert.equal(await post(gw, '/hooks/wake', wake, bearer(HOOK_TOKEN)), 200);
    assert.equal(await post(gw, '/hooks/wake', wake, bearer(HOOK_TOKEN, { 'idempotency-key': 'k1' })), 200);
    assert.equal(await post(gw, '/hooks/wake', wake, bearer(HOOK_TOKEN, { 'idempotency-key': 'k1' })), 200);
    assert.equal(await post(gw, '/hooks/wake', wake, bearer('wrong-token-one')), 401);
    assert.equal(await post(gw, '/hooks/ci', '{"status":"green"}', bearer(HOOK_TOKEN)), 200);
    assert.equal(await post(gw, '/hooks/tr', '{"t":"from a transform"}', bearer(HOOK_TOKEN)), 200);
    assert.equal(await post(gw, '/hooks/spin', '{}', bearer(HOOK_TOKEN)), 500);
    const signed = '{"zen":"x"}';
    const badSignature = await githubSign('not-the-secret', signed);
    assert.equal(await post(gw, '/hooks/github', signed, { ...json, 'x-hub-signature-256': badSignature }), 401);
    assert.equal(await post(gw, '/hooks/no-such-name', '{}', bearer(HOOK_TOKEN)), 404);
    const agent = await fetch(`${gw.url}/hooks/agent`, {
      method: 'POST',
      headers: bearer(HOOK_TOKEN),
      body: '{"message":"summarise","deliver":true}',
    });
    assert.equal(agent.status, 202);
    const { runId } = (await agent.json()) as { runId: string };
    await eventually(async () => (await gw.admin(`/api/runs/${runId}`)).status === 'ok');
    // The third wrong credential locks the address; the next request is refused before its token.
    assert.equal(await post(gw, '/hooks/wake', wake, bearer('wrong-token-two')), 401);
    assert.equal(await post(gw, '/hooks/wake', wake, bearer(HOOK_TOKEN)), 429);
    // A reload the config refuses.
    await writeFile(gw.configPath, '{ not json');
    text = await eventually(async () => {
      const t = await scrape(gw);
      return value(parsePrometheusTextFormat(t) as Family[], 'hookgate_reloads_total', { result: 'failed' }) === 1 && t;
    });
    families = parsePrometheusTextFormat(text) as Family[];
  });
  after(async () => gw?.stop());

  test('requests by endpoint, mapping and status', () => {
    const family = families.find((f) => f.name === 'hookgate_requests_total')!;
    assert.equal(family.type, 'COUNTER');
    const series = family.metrics.map(
      (m) => `${m.labels!.endpoint} ${m.labels!.mapping} ${m.labels!.status} = ${m.value}`,
    );
    assert.deepEqual(series.sort(), [
      'agent  202 = 1',
      'mapping ci 200 = 1',
      'mapping github 401 = 1',
      'mapping spin 500 = 1',
      'mapping tr 200 = 1',
      'unknown  404 = 1',
      'wake  200 = 3',
      'wake  401 = 2',
      'wake  429 = 1',
    ]);
  });

  test('duration and body size histograms count every request', async () => {
    // The parser reads histograms without labels only: it is given one series at a time, labels taken off.
    const wake = histogram(text, 'hookgate_request_duration_seconds', 'endpoint="wake",mapping=""');
    assert.equal(wake.type, 'HISTOGRAM');
    assert.equal(Number(wake.metrics[0]!.count), 6);
    assert.equal(Number(wake.metrics[0]!.buckets!['+Inf']), 6);
    const ci = histogram(text, 'hookgate_request_body_bytes', 'endpoint="mapping",mapping="ci"');
    assert.equal(Number(ci.metrics[0]!.count), 1);
    assert.equal(Number(ci.metrics[0]!.sum), '{"status":"green"}'.length);
    assert.equal(Number(ci.metrics[0]!.buckets!['0']), 0);
    assert.equal(Number(ci.metrics[0]!.buckets!['256']), 1);
  });

  test('auth failures, locks, signatures and duplicates', () => {
    assert.equal(value(families, 'hookgate_auth_failures_total'), 3);
    assert.equal(value(families, 'hookgate_addresses_locked_total'), 1);
    assert.equal(value(families, 'hookgate_signature_failures_total', { scheme: 'github' }), 1);
    assert.equal(value(families, 'hookgate_duplicates_total', { endpoint: 'wake', mapping: '' }), 1);
  });

  test('runs, transforms, reloads and the outbox', () => {
    assert.equal(value(families, 'hookgate_runs_total', { status: 'queued' }), 1);
    assert.equal(value(families, 'hookgate_runs_total', { status: 'running' }), 1);
    assert.equal(value(families, 'hookgate_runs_total', { status: 'ok' }), 1);
    assert.equal(value(families, 'hookgate_run_queue_depth'), 0);
    assert.equal(value(families, 'hookgate_runs_running'), 0);
    assert.equal(value(families, 'hookgate_transform_calls_total', { result: 'ok' }), 1);
    assert.equal(value(families, 'hookgate_transform_calls_total', { result: 'failed' }), 1);
    assert.equal(value(families, 'hookgate_transform_timeouts_total'), 1);
    assert.equal(value(families, 'hookgate_transform_worker_restarts_total'), 1);
    assert.equal(value(families, 'hookgate_reloads_total', { result: 'failed' }), 1);
    assert.equal(value(families, 'hookgate_reloads_total', { result: 'ok' }), undefined);
    assert.equal(value(families, 'hookgate_outbox_size'), 1);
  });

  test('the gmail and shared-state metrics are declared for their callers', () => {
    for (const name of [
      'hookgate_gmail_notifications_total',
      'hookgate_gmail_errors_total',
      'hookgate_shared_state_up',
    ]) {
      assert.ok(
        families.some((f) => f.name === name),
        name,
      );
    }
  });
});

describe('who may read /metrics', () => {
  test('the gateway token, never the hook token; open with gateway.metrics.public', async () => {
    const stateDir = await tempStateDir();
    await writeConfig(stateDir);
    let gw = await spawnGateway(stateDir);
    try {
      assert.equal((await fetch(`${gw.url}/metrics`)).status, 401);
      assert.equal((await fetch(`${gw.url}/metrics`, { headers: bearer(HOOK_TOKEN) })).status, 401);
      assert.equal((await fetch(`${gw.url}/metrics`, { headers: bearer(GATEWAY_TOKEN) })).status, 200);
      assert.equal((await fetch(`${gw.url}/metrics`, { method: 'POST', headers: bearer(GATEWAY_TOKEN) })).status, 405);
    } finally {
      await gw.stop();
    }
    await writeConfig(stateDir, { gateway: { metrics: { public: true } } });
    gw = await spawnGateway(stateDir);
    try {
      const res = await fetch(`${gw.url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /^# HELP hookgate_/m);
    } finally {
      await gw.stop();
    }
  });
});
