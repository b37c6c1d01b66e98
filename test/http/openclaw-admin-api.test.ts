// The admin API as OpenClaw mounts it under /hookgate/api/ (OpenClaw checks the gateway token before
// the handler; test-openclaw/after-the-200.ts proves that part inside a real OpenClaw): the handler on
// a loopback server around a real plugin, its read-only views, its refusals, and the admin body's bounds.
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { answerAdmin, openClawAdmin } from '../../plugin/hosts/openclaw/admin-api.ts';
import { RecentRuns } from '../../plugin/hosts/openclaw/recent-runs.ts';
import { readAdminBody, MAX_ADMIN_BODY } from '../../plugin/admin/admin-http.ts';
import { HookError, hooksStatus, refuse, writeError, writeJson } from '../../plugin/host-kit.ts';
import { hookgateTools } from '../../plugin/hosts/openclaw/tools.ts';
import { toolCall } from '../../plugin/hosts/openclaw/admin-tools.ts';
import type { RunningHookgate } from '../../plugin/hosts/openclaw/service.ts';
import { assertError, type JsonAnswer } from '../helpers/common.ts';
import { HOOK_TOKEN, post, startTestGateway, type TestGateway } from '../helpers/recording-host.ts';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function call(url: string, init: RequestInit = {}): Promise<JsonAnswer> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

describe('OpenClaw admin API handler', () => {
  let gw: TestGateway;
  let server: Server;
  let api: string;
  const runs = new RecentRuns(3);

  before(async () => {
    gw = await startTestGateway({
      hooks: { allowRequestSessionKey: true },
      turn: async () => ({ status: 'ok', reply: 'SECRET-REPLY-TEXT' }),
      runUpdate: (r) => runs.note(r),
    });
    const ask = openClawAdmin(gw.plugin, runs);
    server = createServer((req, res) => void answerAdmin(ask, req, res, gw.host.logger));
    api = `${await listen(server)}/hookgate/api`;
  });

  after(async () => {
    server?.close();
    await gw?.close();
  });

  test('GET requests: the request log, limit checked like the standalone', async () => {
    const wake = await post(gw.url, '/hooks/wake', { text: 'admin probe' }, { token: HOOK_TOKEN });
    assert.equal(wake.status, 200);
    const r = await call(`${api}/requests?limit=5`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(
      r.body.requests.some((e: { path: string; status: number }) => e.path === '/hooks/wake' && e.status === 200),
    );
    assert.ok(!JSON.stringify(r.body).includes('admin probe'), 'no payload in the request log');
    assertError(await call(`${api}/requests?limit=0`), 400, 'bad_request', /limit/);
    assertError(await call(`${api}/requests?limit=2&limit=3`), 400, 'bad_request', /limit/);
  });

  test('GET runs/<id>: status and attempts from the host record, never the reply text; the oldest forgotten', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await post(gw.url, '/hooks/agent', { message: `run ${i}`, name: `n${i}` }, { token: HOOK_TOKEN });
      assert.equal(r.status, 202);
      ids.push(r.body.runId);
      await gw.finalRun(r.body.runId);
    }
    const r = await call(`${api}/runs/${encodeURIComponent(ids[3]!)}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.runId, ids[3]);
    assert.equal(r.body.status, 'ok');
    assert.equal(r.body.name, 'n3');
    // The run book adds its hook and the request that started it.
    assert.equal(r.body.hook, 'agent');
    assert.equal(typeof r.body.requestId, 'string');
    assert.ok(!JSON.stringify(r.body).includes('SECRET-REPLY-TEXT'));
    // Kept: the last 3 of this test's host record.
    assertError(await call(`${api}/runs/${ids[0]}`), 404, 'not_found', /no such run/);
    assertError(await call(`${api}/runs/no-such-run`), 404, 'not_found', /no such run/);
  });

  test('refusals: unknown endpoint 404, a write to a read-only view 405, bad percent-encoding 400', async () => {
    assertError(await call(`${api}/nope`), 404, 'not_found', /no such admin endpoint/);
    assertError(await call(`${api}`), 404, 'not_found');
    assertError(await call(`${api}/requests`, { method: 'POST', body: '{}' }), 405, 'method_not_allowed');
    assertError(await call(`${api}/runs/%E0%A4%A`), 400, 'bad_request', /percent-encoding/);
  });

  test("the core's routes answer here: their answers and refusals, and the body bound", async () => {
    const pads = JSON.stringify({ failed: true, since: '2026-11-25T00:00:00Z', pad: 'x'.repeat(70_000) });
    assertError(await call(`${api}/replay`, { method: 'POST', body: pads }), 413, 'payload_too_large');
    const none = await call(`${api}/replay`, {
      method: 'POST',
      body: '{"failed":true,"since":"2026-11-25T00:00:00Z"}',
    });
    assert.equal(none.status, 200, JSON.stringify(none.body));
    assert.deepEqual([none.body.ok, none.body.replayed], [true, 0]);
    assertError(await call(`${api}/failures?state=nope`), 400, 'bad_request', /state/);
    const hooks = await call(`${api}/hooks`);
    assert.equal(hooks.status, 200);
    assert.ok(hooks.body.hooks.some((h: { name: string }) => h.name === 'wake'));
  });
});

describe('admin request bodies', () => {
  let server: Server;
  let base: string;

  before(async () => {
    server = createServer((req, res) => {
      readAdminBody(req, 300).then(
        (body) => writeJson(res, 200, { body: body ?? null }),
        (err: unknown) => writeError(res, err instanceof HookError ? err : refuse.internal()),
      );
    });
    base = await listen(server);
  });

  after(() => server?.close());

  test('JSON is read; empty is undefined; not JSON is 400', async () => {
    assert.deepEqual((await call(base, { method: 'POST', body: '{"failed":true}' })).body, { body: { failed: true } });
    assert.deepEqual((await call(base, { method: 'POST', body: '' })).body, { body: null });
    assertError(await call(base, { method: 'POST', body: '{nope' }), 400, 'bad_request', /not valid JSON/);
  });

  test('a body past 64 KiB is 413, declared or streamed', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(MAX_ADMIN_BODY) });
    assertError(await call(base, { method: 'POST', body: big }), 413, 'payload_too_large');
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    assertError(
      await call(base, { method: 'POST', body: stream, duplex: 'half' } as RequestInit),
      413,
      'payload_too_large',
    );
  });

  test('a body that stops arriving is 408 after the bound', async () => {
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${base}/`, { method: 'POST', headers: { 'content-length': '100' } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.write('{"a":');
    });
    assert.equal(answer.status, 408, answer.text);
    assert.equal(JSON.parse(answer.text).code, 'body_timeout');
  });
});

describe('hookgate_status over the same admin API', () => {
  let gw: TestGateway;

  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw?.close());

  test('every hook says whether it is paused and how much it holds', async () => {
    const ask = openClawAdmin(gw.plugin, new RecentRuns());
    const running = { status: () => hooksStatus(gw.plugin), admin: ask } as unknown as RunningHookgate;
    const status = hookgateTools({ running: () => running, failure: () => undefined }).find(
      (t) => t.name === 'hookgate_status',
    )!;
    const before = (await status.execute('id', {})).details as { hooks: { id: string; paused: boolean }[] };
    assert.deepEqual(
      before.hooks.map((h) => [h.id, h.paused]),
      [
        ['wake', false],
        ['agent', false],
      ],
    );
    await ask(toolCall('POST', ['hooks', 'wake', 'pause']));
    const held = await post(gw.url, '/hooks/wake', { text: 'held while paused' }, { token: HOOK_TOKEN });
    assert.equal(held.status, 202);
    const after = (await status.execute('id', {})).details as {
      hooks: { id: string; paused: boolean; held: number }[];
    };
    assert.deepEqual(after.hooks[0], { ...after.hooks[0], id: 'wake', paused: true, held: 1 });
    await ask(toolCall('POST', ['hooks', 'wake', 'resume']));
  });
});
