// The request log on the real gateway: GET /api/requests shows each hook request's facts and never
// its payload, token, signature or a name no mapping owns; `hookgate requests` prints it as a table,
// filtered, and --follow prints a request made while it runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import { assertError } from '../helpers/common.ts';
import {
  eventually,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = path.join(ROOT, 'plugin', 'hosts', 'standalone', 'cli', 'index.ts');
const SECRET = 'request-log-github-secret-0123';
const PAYLOAD_CANARY = 'PAYLOAD-CANARY-7f3e9';
const WRONG_TOKEN = 'WRONG-TOKEN-CANARY-55a1';
const NAME_CANARY = 'NAME-CANARY-d41d8';

let gw: SpawnedGateway;
let signature: string;

function post(p: string, body: string, headers: Record<string, string>): Promise<number> {
  return fetch(gw.url + p, { method: 'POST', headers, body }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });
}

async function requests(query = ''): Promise<{ status: number; text: string; body: any }> {
  const res = await fetch(`${gw.url}/api/requests${query}`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) };
}

function cli(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLI, ...args, '--config', gw.configPath, '--url', gw.url],
      { cwd: ROOT },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

before(async () => {
  const stateDir = await tempStateDir();
  await writeConfig(stateDir, {
    hooks: {
      mappings: [
        {
          id: 'github',
          match: { path: 'github' },
          action: 'wake',
          textTemplate: 'push to {{repository}}',
          verify: { scheme: 'github', secret: SECRET },
        },
      ],
    },
  });
  gw = await spawnGateway(stateDir);
  const bearer = { authorization: `Bearer ${HOOK_TOKEN}` };
  const wake = JSON.stringify({ text: `deploy ${PAYLOAD_CANARY}`, mode: 'next-heartbeat' });
  assert.equal(await post('/hooks/wake', wake, { ...bearer, 'idempotency-key': 'deploy-1' }), 200);
  assert.equal(await post('/hooks/wake', wake, { ...bearer, 'idempotency-key': 'deploy-1' }), 200);
  // A key with a tab (refused, 400) and one far too long (refused): logged cleaned and capped.
  assert.equal(await post('/hooks/wake', wake, { ...bearer, 'idempotency-key': 'tab\there' }), 400);
  assert.equal(await post('/hooks/wake', wake, { ...bearer, 'idempotency-key': 'k'.repeat(300) }), 400);
  const signed = JSON.stringify({ repository: PAYLOAD_CANARY });
  signature = await sign(SECRET, signed);
  assert.equal(
    await post('/hooks/github', signed, { 'x-hub-signature-256': signature, 'x-github-delivery': 'gh-delivery-9' }),
    200,
  );
  assert.equal(await post('/hooks/wake', wake, { authorization: `Bearer ${WRONG_TOKEN}` }), 401);
  assert.equal(await post(`/hooks/${NAME_CANARY}`, wake, bearer), 404);
});
after(async () => gw?.stop());

describe('GET /api/requests', () => {
  test('each request, oldest first, with its facts', async () => {
    const { status, body } = await requests();
    assert.equal(status, 200);
    const rows = body.requests.map((r: any) => [r.path, r.status, r.code, r.mapping, r.idempotencyKey, r.duplicate]);
    assert.deepEqual(rows, [
      ['/hooks/wake', 200, undefined, undefined, 'deploy-1', undefined],
      ['/hooks/wake', 200, undefined, undefined, 'deploy-1', true],
      ['/hooks/wake', 400, 'invalid_idempotency_key', undefined, 'tabhere', undefined],
      ['/hooks/wake', 400, 'invalid_idempotency_key', undefined, `${'k'.repeat(80)}…`, undefined],
      ['/hooks/github', 200, undefined, 'github', 'gh-delivery-9', undefined],
      ['/hooks/wake', 401, 'unauthorized', undefined, undefined, undefined],
      ['/hooks/…', 404, 'not_found', undefined, undefined, undefined],
    ]);
    for (const r of body.requests) {
      assert.match(r.at, /^\d{4}-\d\d-\d\dT/);
      assert.match(r.requestId, /^[0-9a-f-]{8,}/);
      assert.equal(r.client, '127.0.0.1');
      assert.equal(typeof r.ms, 'number');
    }
    assert.equal(
      body.requests[0].bytes,
      JSON.stringify({ text: `deploy ${PAYLOAD_CANARY}`, mode: 'next-heartbeat' }).length,
    );
  });

  test('never a payload, a token, a signature or a name no mapping owns', async () => {
    const { text } = await requests();
    for (const secret of [
      PAYLOAD_CANARY,
      HOOK_TOKEN,
      WRONG_TOKEN,
      GATEWAY_TOKEN,
      NAME_CANARY,
      signature.slice(7),
      SECRET,
    ]) {
      assert.ok(!text.includes(secret), `the answer holds ${secret}`);
    }
  });

  test('?limit=N gives the newest N; a bad limit is a 400 naming limit', async () => {
    const { body } = await requests('?limit=2');
    assert.deepEqual(
      body.requests.map((r: any) => r.status),
      [401, 404],
    );
    for (const bad of ['0', '-1', 'abc', '1001', '1.5', '']) {
      const r = await requests(`?limit=${bad}`);
      assertError({ status: r.status, body: r.body }, 400, 'bad_request', /limit/);
    }
    const twice = await requests('?limit=1&limit=2');
    assert.equal(twice.status, 400);
  });

  test('the gateway token only', async () => {
    const res = await fetch(`${gw.url}/api/requests`, { headers: { authorization: `Bearer ${HOOK_TOKEN}` } });
    assert.equal(res.status, 401);
  });
});

describe('hookgate requests', () => {
  test('a table, filtered by status class and path', async () => {
    const all = await cli(['requests']);
    assert.equal(all.code, 0, all.out);
    const lines = all.out.trimEnd().split('\n');
    assert.match(
      lines[0]!,
      /^TIME\s+STATUS\s+CODE\s+MS\s+BYTES\s+PATH\s+MAPPING\s+CLIENT\s+KEY\s+DUP\s+HELD\s+REQUEST ID$/,
    );
    assert.ok(lines.length >= 8, all.out);
    const refused = await cli(['requests', '--status', '4xx']);
    const rows = refused.out.trimEnd().split('\n').slice(1);
    assert.equal(rows.length, 4, refused.out);
    assert.ok(rows.every((r) => /\s4\d\d\s/.test(r)));
    const github = await cli(['requests', '--path', 'github']);
    const githubRows = github.out.trimEnd().split('\n').slice(1);
    assert.equal(githubRows.length, 1, github.out);
    assert.match(githubRows[0]!, /\/hooks\/github\s+github\s+127\.0\.0\.1\s+gh-delivery-9/);
    assert.ok(!all.out.includes(PAYLOAD_CANARY));
    const bad = await cli(['requests', '--status', 'bad']);
    assert.equal(bad.code, 2);
  });

  test('--follow prints a request made while it runs', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CLI, 'requests', '--follow', '--path', 'wake', '--config', gw.configPath, '--url', gw.url],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await eventually(async () => out.includes('REQUEST ID'), 20_000);
      const before = out;
      const res = await fetch(`${gw.url}/hooks/wake`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'idempotency-key': 'made-while-following' },
        body: '{"text":"while following","mode":"next-heartbeat"}',
      });
      assert.equal(res.status, 200);
      await eventually(async () => out.includes('made-while-following'), 10_000);
      const added = out.slice(before.length).trimEnd().split('\n');
      assert.equal(added.length, 1, out);
      assert.match(added[0]!, /\s200\s.*\/hooks\/wake\s.*made-while-following/);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
