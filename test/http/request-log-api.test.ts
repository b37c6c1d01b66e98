// The request log's admin routes over loopback HTTP, as every host serves them: GET /api/requests with
// its filters and `before` paging, a request by id, the live tail as server-sent events (and nothing
// subscribed once its client goes), entries kept on disk under the state dir and read back by the
// next instance; bad queries are 400s naming the parameter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { post, startTestGateway, withGateway, type TestGateway } from '../helpers/recording-host.ts';
import { assertError, waitUntil } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';

async function get(gw: TestGateway, p: string): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${gw.url}/api/${p}`);
  return { status: res.status, headers: res.headers, body: await res.json() };
}

const HOOKS = {
  mappings: [{ id: 'github', match: { path: 'github' }, action: 'agent', messageTemplate: 'push {{ref}}' }],
};

test('entries name their hook, refusal sentence, runs, dedupe key and phases; filters and paging', async () => {
  await withGateway({ hooks: HOOKS }, async (gw) => {
    const run = await post(gw.url, '/hooks/github', { ref: 'main' }, { headers: { 'idempotency-key': 'push-1' } });
    assert.equal(run.status, 202);
    const dup = await post(gw.url, '/hooks/github', { ref: 'main' }, { headers: { 'idempotency-key': 'push-1' } });
    assert.equal(dup.status, 202);
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'x' }, { token: 'wrong-token-0123456789' })).status, 401);
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'hi', mode: 'now' })).status, 200);
    await waitUntil(() => gw.plugin.requests.size === 4, 'four requests logged');

    const all = await get(gw, 'requests');
    assert.equal(all.status, 200);
    assert.deepEqual(
      all.body.requests.map((r: any) => r.hook),
      ['github', 'github', 'wake', 'wake'],
    );
    const [first, second, refused] = all.body.requests;
    assert.deepEqual(first.runIds, [run.body.runId]);
    assert.equal(first.dedupeKey, 'push-1');
    assert.deepEqual(
      first.phases.map((p: any) => p.name),
      ['check', 'receive', 'act', 'answer'],
    );
    assert.ok(first.phases.every((p: any) => typeof p.ms === 'number' && p.ms >= 0));
    assert.equal(second.duplicate, true);
    assert.deepEqual(second.runIds, [run.body.runId], "a duplicate names the first answer's run");
    assert.equal(refused.code, 'unauthorized');
    assert.equal(refused.reason, (await post(gw.url, '/hooks/wake', {}, { token: null })).body.error);
    assert.deepEqual(
      refused.phases.map((p: any) => p.name),
      ['check', 'answer'],
    );

    const ids = (r: { body: { requests: { requestId: string }[] } }): string[] =>
      r.body.requests.map((e) => e.requestId);
    assert.deepEqual(ids(await get(gw, 'requests?hook=github')), [first.requestId, second.requestId]);
    assert.deepEqual(ids(await get(gw, 'requests?outcome=duplicate')), [second.requestId]);
    assert.equal((await get(gw, 'requests?outcome=4xx')).body.requests[0].code, 'unauthorized');
    assert.equal((await get(gw, 'requests?code=unauthorized&client=127.0.0.1')).body.requests.length, 2);
    assert.equal((await get(gw, 'requests?client=10.9.9.9')).body.requests.length, 0);
    const future = new Date(Date.now() + 60_000).toISOString();
    assert.equal((await get(gw, `requests?since=${future}`)).body.requests.length, 0);
    assert.equal((await get(gw, `requests?until=${future}`)).body.requests.length, 5);

    // Pages of two, newest first, each oldest first within; the last has no cursor.
    const p1 = await get(gw, 'requests?limit=2');
    assert.equal(p1.body.requests.length, 2);
    const p2 = await get(gw, `requests?limit=2&before=${p1.body.before}`);
    const p3 = await get(gw, `requests?limit=2&before=${p2.body.before}`);
    assert.deepEqual([...ids(p3), ...ids(p2), ...ids(p1)], ids(all).concat(ids(await get(gw, 'requests?limit=1'))));
    assert.equal(p3.body.before, undefined);

    const one = await get(gw, `requests/${encodeURIComponent(first.requestId)}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.request, first);
    assertError(await get(gw, 'requests/no-such-id'), 404, 'not_found', /no-such-id/);
  });
});

test('a bad query is a 400 naming the parameter', async () => {
  await withGateway({}, async (gw) => {
    assertError(await get(gw, 'requests?limit=0'), 400, 'bad_request', /limit/);
    assertError(await get(gw, 'requests?limit=1001'), 400, 'bad_request', /limit/);
    assertError(await get(gw, 'requests?outcome=3xx'), 400, 'bad_request', /outcome must be one of 2xx, 4xx/);
    assertError(await get(gw, 'requests?before=abc'), 400, 'bad_request', /before/);
    assertError(await get(gw, 'requests?since=yesterday'), 400, 'bad_request', /since/);
    assertError(await get(gw, 'requests?hook=a&hook=b'), 400, 'bad_request', /hook/);
    assertError(await get(gw, 'requests?status=404'), 400, 'bad_request', /unknown parameter "status"/);
    const res = await fetch(`${gw.url}/api/requests`, { method: 'POST' });
    assertError({ status: res.status, body: await res.json() }, 405, 'method_not_allowed');
  });
});

/** Reads server-sent events from a live tail until `count` have come. */
async function tail(url: string, count: number, opened: () => Promise<void>): Promise<{ event: string; data: any }[]> {
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: { event: string; data: any }[] = [];
  let text = '';
  let started = false;
  try {
    while (events.length < count) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      if (!started && text.includes(': hookgate live')) {
        started = true;
        void opened();
      }
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) events.push({ event, data: JSON.parse(data) });
      }
    }
  } finally {
    controller.abort();
  }
  return events;
}

test('the live tail: each new entry that passes the filter as one event, and nothing left subscribed after', async () => {
  await withGateway({ hooks: HOOKS }, async (gw) => {
    assert.equal(gw.plugin.requests.subscribers, 0, 'nobody watching: nothing subscribed');
    const events = await tail(`${gw.url}/api/requests/live?hook=github`, 2, async () => {
      // A wake the filter leaves out, then two for github.
      await post(gw.url, '/hooks/wake', { text: 'not shown' });
      await post(gw.url, '/hooks/github', { ref: 'a' });
      await post(gw.url, '/hooks/nope', { ref: 'b' });
      await post(gw.url, '/hooks/github', { ref: 'c' });
    });
    assert.deepEqual(
      events.map((e) => [e.event, e.data.hook, e.data.status]),
      [
        ['request', 'github', 202],
        ['request', 'github', 202],
      ],
    );
    assert.equal(typeof events[0]!.data.at, 'string');
    await waitUntil(() => gw.plugin.requests.subscribers === 0, 'the subscription ends with its client');
    const bad = await fetch(`${gw.url}/api/requests/live?outcome=nope`);
    assertError({ status: bad.status, body: await bad.json() }, 400, 'bad_request', /outcome/);
  });
});

test('with a state dir the log is on disk, and the next instance reads it back', async () => {
  const stateDir = await tempDir('request-log-api-');
  const first = await startTestGateway({ stateDir });
  let ids: string[];
  try {
    for (let i = 0; i < 3; i++) assert.equal((await post(first.url, '/hooks/wake', { text: `w${i}` })).status, 200);
    await waitUntil(() => first.plugin.requests.size === 3, 'three logged');
    ids = (await get(first, 'requests')).body.requests.map((r: any) => r.requestId);
  } finally {
    await first.close();
  }
  assert.ok((await readdir(path.join(stateDir, 'requests'))).some((f) => f.endsWith('.jsonl')));
  await withGateway({ stateDir }, async (second) => {
    assert.deepEqual(
      (await get(second, 'requests')).body.requests.map((r: any) => r.requestId),
      ids,
    );
  });
});
