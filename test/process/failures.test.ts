// The failure book over HTTP on the real gateway, with a model provider on loopback that refuses
// (a 400 is not retried): failed runs listed newest first and paged, dismissed, bad queries refused
// naming the field, each failed run told by its own summary (naming its failure) and no other event,
// and the book kept across a kill -9.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import { eventually, GATEWAY_TOKEN, MAIN, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { assertError } from '../helpers/common.ts';

async function call(url: string, method: string, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url + p, { method, headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

async function mainEvents(gw: { admin(p: string): Promise<any> }): Promise<string[]> {
  const page = await gw.admin(`/api/sessions/${MAIN}/history?limit=1000`);
  return page.entries.filter((e: any) => e.kind === 'system-event').map((e: any) => e.text as string);
}

test('failed runs are listed newest first, paged, dismissed, each told by its summary alone, and kept across kill -9', async () => {
  const provider = await startFakeProvider((_req, res) => {
    res.statusCode = 400;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ error: { message: 'the model refuses this prompt' } }));
  });
  const dir = await tempStateDir();
  await writeConfig(dir, {
    models: { providers: { fake: { baseUrl: provider.baseUrl, apiKey: 'sk-failures-test-key' } } },
    agents: { defaults: { models: ['fake/m1'] }, list: [{ id: 'main', default: true }] },
  });
  let gw = await spawnGateway(dir);
  try {
    const runIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await gw.hook('/hooks/agent', { message: `job ${i}`, model: 'fake/m1', name: 'Pager' });
      assert.equal(r.status, 202);
      runIds.push(r.body.runId);
    }
    const all = await eventually(async () => {
      const page = await gw.admin('/api/failures');
      return page.failures.length === 5 && page;
    });
    assert.equal(all.before, undefined);
    assert.deepEqual(all.failures.map((f: any) => f.runId).sort(), [...runIds].sort());
    for (const f of all.failures) {
      assert.match(f.id, /^fail_[0-9a-f]{16}$/);
      assert.equal(f.kind, 'run');
      assert.equal(f.hook, 'Pager');
      assert.equal(f.agentId, 'main');
      assert.equal(f.attempts, 1);
      assert.equal(f.state, 'open');
      assert.match(f.lastError, /400/);
      assert.match(f.lastError, /the model refuses/);
      assert.ok(!Number.isNaN(Date.parse(f.firstAt)) && !Number.isNaN(Date.parse(f.lastAt)));
      assert.equal(f.action, undefined, 'the stored action is not shown');
    }
    assert.ok(!JSON.stringify(all).includes('sk-failures-test-key'));
    // Each failure names the request that accepted its run, as the request log shows it.
    const accepted = (await gw.admin('/api/requests')).requests
      .filter((r: any) => r.status === 202)
      .map((r: any) => r.requestId)
      .sort();
    assert.deepEqual(all.failures.map((f: any) => f.requestId).sort(), accepted);

    // Pages of two walk back to the oldest, newest first.
    const walked: string[] = [];
    let before: string | undefined;
    do {
      const page = await gw.admin(`/api/failures?limit=2${before ? `&before=${before}` : ''}`);
      assert.ok(page.failures.length <= 2);
      walked.push(...page.failures.map((f: any) => f.id));
      before = page.before;
    } while (before);
    assert.deepEqual(
      walked,
      all.failures.map((f: any) => f.id),
    );
    const lastAts = all.failures.map((f: any) => Date.parse(f.lastAt));
    assert.deepEqual(
      lastAts,
      [...lastAts].sort((a, b) => b - a),
      'newest first',
    );

    // Each failed run's one event is its summary, naming its failure; the book posts none beside it.
    const events = await mainEvents(gw);
    assert.equal(events.length, 5, JSON.stringify(events));
    for (const f of all.failures) {
      const summary = events.find((t) => t.endsWith(` (failure ${f.id})`));
      assert.match(summary ?? '', /^Hook Pager \(error\): .*400.*the model refuses/);
    }

    const target = all.failures[1];
    const dismissed = await call(gw.url, 'POST', `/api/failures/${target.id}/dismiss`);
    assert.equal(dismissed.status, 200);
    assert.equal(dismissed.body.ok, true);
    assert.equal(dismissed.body.failure.state, 'dismissed');
    assert.equal((await call(gw.url, 'POST', `/api/failures/${target.id}/dismiss`)).body.failure.state, 'dismissed');
    const open = await gw.admin('/api/failures?state=open');
    assert.equal(open.failures.length, 4);
    assert.ok(!open.failures.some((f: any) => f.id === target.id));
    assert.equal((await gw.admin('/api/failures?state=all')).failures.length, 5);
    assert.equal((await gw.admin('/api/failures?hook=Pager&limit=3')).failures.length, 3);
    assert.equal((await gw.admin('/api/failures?hook=Other')).failures.length, 0);

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=abc', 'limit'],
      ['before=xyz', 'before'],
      ['before=1&before=2', 'before'],
      ['state=closed', 'state'],
      ['hook=', 'hook'],
    ] as const) {
      assertError(await call(gw.url, 'GET', `/api/failures?${query}`), 400, 'bad_request', new RegExp(field));
    }
    assertError(await call(gw.url, 'POST', '/api/failures/fail_0000000000000000/dismiss'), 404, 'not_found');
    assertError(await call(gw.url, 'GET', `/api/failures/${target.id}/dismiss`), 405, 'method_not_allowed');
    assertError(await call(gw.url, 'POST', '/api/failures'), 405, 'method_not_allowed');
    const anonymous = await fetch(`${gw.url}/api/failures`);
    assert.equal(anonymous.status, 401);

    const metrics = await (
      await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } })
    ).text();
    assert.match(metrics, /^hookgate_failures_total\{kind="run"\} 5$/m);

    await gw.stop('SIGKILL');
    gw = await spawnGateway(dir);
    const kept = await gw.admin('/api/failures?state=all');
    assert.deepEqual(kept, (await call(gw.url, 'GET', '/api/failures?state=all')).body);
    assert.deepEqual(
      kept.failures.map((f: any) => [f.id, f.state]),
      all.failures.map((f: any) => [f.id, f.id === target.id ? 'dismissed' : 'open']),
    );
    // New failures after the restart come after the kept ones.
    const later = await gw.hook('/hooks/agent', { message: 'after restart', model: 'fake/m1', name: 'Pager' });
    const newest = await eventually(async () => {
      const page = await gw.admin('/api/failures?limit=1');
      return page.failures[0]?.runId === later.body.runId && page;
    });
    assert.equal(typeof newest.before, 'string');
    // The stored action came back with it: a kept failure replays (and fails again, as a new failure).
    const replay = await call(gw.url, 'POST', `/api/failures/${all.failures[0].id}/replay`);
    assert.equal(replay.status, 202);
    assert.equal(replay.body.replayOf, all.failures[0].runId);
    await eventually(async () => {
      const page = await gw.admin('/api/failures?limit=1');
      return page.failures[0]?.runId === replay.body.runId;
    });
  } finally {
    await gw.stop();
    await provider.close();
  }
});
