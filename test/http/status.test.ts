// Every row of DESIGN.md's status table, through the real HTTP server on loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  post,
  startTestGateway,
  type TestGateway,
  withGateway,
} from '../helpers/recording-host.ts';
import { assertError } from '../helpers/common.ts';

let gw: TestGateway;
before(async () => {
  gw = await startTestGateway({ hooks: { maxQueuedRuns: 0, maxConcurrentRuns: 1 } });
});
after(() => gw.close());

test('wake accepted: 200 { ok, mode }', async () => {
  const r = await post(gw.url, '/hooks/wake', { text: 'Build finished' });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { ok: true, mode: 'now' });
  const r2 = await post(gw.url, '/hooks/wake', { text: 'later', mode: 'next-heartbeat' });
  assert.deepEqual(r2.body, { ok: true, mode: 'next-heartbeat' });
});

test('agent accepted: 202 { ok, runId }', async () => {
  const r = await post(gw.url, '/hooks/agent', { message: 'Summarise the build' });
  assert.equal(r.status, 202);
  assert.equal(r.body.ok, true);
  assert.match(r.body.runId, /^[0-9a-f-]{36}$/);
  await gw.finalRuns(1);
});

test('token in the query string: 400 token_in_query, even next to a valid header', async () => {
  assertError(
    await post(gw.url, `/hooks/wake?token=${HOOK_TOKEN}`, { text: 'x' }, { token: null }),
    400,
    'token_in_query',
  );
  assertError(await post(gw.url, '/hooks/wake?token=whatever', { text: 'x' }), 400, 'token_in_query');
  assertError(await post(gw.url, '/hooks/wake?a=1&token=', { text: 'x' }), 400, 'token_in_query');
});

test('method other than POST: 405 with Allow: POST', async () => {
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    const r = await post(gw.url, '/hooks/wake', { text: 'x' }, { method });
    assertError(r, 405, 'method_not_allowed');
    assert.equal(r.headers.get('allow'), 'POST');
  }
});

test('missing or wrong token: 401; every carrier accepted', async () => {
  assertError(await post(gw.url, '/hooks/wake', { text: 'x' }, { token: null }), 401, 'unauthorized');
  assertError(await post(gw.url, '/hooks/wake', { text: 'x' }, { token: 'nope' }), 401, 'unauthorized');
  assertError(await post(gw.url, '/hooks/wake', { text: 'x' }, { token: GATEWAY_TOKEN }), 401, 'unauthorized');
  const viaHeader = await post(
    gw.url,
    '/hooks/wake',
    { text: 'x' },
    { token: null, headers: { 'x-service-token': HOOK_TOKEN } },
  );
  assert.equal(viaHeader.status, 200);
  // OpenClaw's built-in hooks' carrier: senders moving over keep working.
  const viaOpenClawHeader = await post(
    gw.url,
    '/hooks/wake',
    { text: 'x' },
    { token: null, headers: { 'x-openclaw-token': HOOK_TOKEN } },
  );
  assert.equal(viaOpenClawHeader.status, 200);
  assertError(
    await post(gw.url, '/hooks/wake', { text: 'x' }, { token: null, headers: { 'x-openclaw-token': 'nope' } }),
    401,
    'unauthorized',
  );
  const lowerScheme = await post(
    gw.url,
    '/hooks/wake',
    { text: 'x' },
    { token: null, headers: { authorization: `bearer ${HOOK_TOKEN}` } },
  );
  assert.equal(lowerScheme.status, 200);
});

test('no such hook, or the bare prefix: 404 not_found (after auth)', async () => {
  assertError(await post(gw.url, '/hooks/nothing-here', { text: 'x' }), 404, 'not_found');
  assertError(await post(gw.url, '/hooks', { text: 'x' }), 404, 'not_found');
  assertError(await post(gw.url, '/hooks/', { text: 'x' }), 404, 'not_found');
  assertError(await post(gw.url, '/hooks/wake/extra', { text: 'x' }), 404, 'not_found');
  // An unknown name without a token is an auth failure first: names are not revealed.
  assertError(await post(gw.url, '/hooks/nothing-here', { text: 'x' }, { token: null }), 401, 'unauthorized');
});

test('paths outside the prefix are left to the host', async () => {
  for (const p of ['/hooksx/wake', '/other', '/', '/HOOKS/wake']) {
    const r = await post(gw.url, p, { text: 'x' });
    assert.equal(r.status, 404);
    assert.equal(r.body, 'host 404');
  }
});

test('body over the limit: 413 payload_too_large', async () => {
  const big = 'x'.repeat(300_000);
  assertError(await post(gw.url, '/hooks/wake', { text: big }), 413, 'payload_too_large');
});

test('body not JSON or not an object: 400 invalid_json, whatever the Content-Type', async () => {
  for (const raw of ['', 'not json', '[1,2]', 'null', '"text"', '42', '{"text": "x"']) {
    assertError(await post(gw.url, '/hooks/wake', undefined, { rawBody: raw }), 400, 'invalid_json');
  }
  const form = await post(gw.url, '/hooks/wake', undefined, {
    rawBody: '{"text":"sent by curl -d"}',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(form.status, 200);
});

test('payload fails its schema: 400 invalid_payload naming the field', async () => {
  const cases: [string, unknown, RegExp][] = [
    ['/hooks/wake', {}, /text is required/],
    ['/hooks/wake', { text: '   ' }, /text must not be blank/],
    ['/hooks/wake', { text: 5 }, /text must be a string/],
    ['/hooks/wake', { text: 'x', mode: 'later' }, /mode must be one of: now, next-heartbeat/],
    ['/hooks/wake', { text: 'x', extra: 1 }, /extra is not a known field/],
    ['/hooks/agent', {}, /message is required/],
    ['/hooks/agent', { message: '' }, /message must not be blank/],
    ['/hooks/agent', { message: 'x', channel: 'irc' }, /channel must be one of/],
    ['/hooks/agent', { message: 'x', timeoutSeconds: 0 }, /timeoutSeconds must be greater than 0/],
    ['/hooks/agent', { message: 'x', timeoutSeconds: 3601 }, /timeoutSeconds must be at most 3600/],
    ['/hooks/agent', { message: 'x', timeoutSeconds: '10' }, /timeoutSeconds must be a number/],
    ['/hooks/agent', { message: 'x', deliver: 'yes' }, /deliver must be a boolean/],
    ['/hooks/agent', { message: 'x', wakeMode: 'soon' }, /wakeMode must be one of/],
    [
      '/hooks/agent',
      { message: 'x', allowUnsafeExternalContent: true },
      /allowUnsafeExternalContent is not a known field/,
    ],
  ];
  for (const [p, body, msg] of cases) {
    const r = await post(gw.url, p, body);
    assertError(r, 400, 'invalid_payload');
    assert.match(r.body.error, msg);
  }
});

test('sessionKey sent while request keys are disabled: 400 session_key_disabled', async () => {
  assertError(await post(gw.url, '/hooks/agent', { message: 'x', sessionKey: 'hook:a' }), 400, 'session_key_disabled');
});

test('agentId denied, model denied: 400 with their codes', async () => {
  const g = await startTestGateway({ hooks: { allowedAgentIds: ['main'] }, models: ['echo/echo'] });
  try {
    assertError(await post(g.url, '/hooks/agent', { message: 'x', agentId: 'ops' }), 400, 'agent_not_allowed');
    assertError(await post(g.url, '/hooks/agent', { message: 'x', model: 'openai/gpt-x' }), 400, 'model_not_allowed');
    const ok = await post(g.url, '/hooks/agent', { message: 'x', model: 'echo/echo' });
    assert.equal(ok.status, 202);
  } finally {
    await g.close();
  }
});

test('run queue full: 503 overloaded with Retry-After', async () => {
  let release!: () => void;
  const blocked = new Promise<void>((r) => (release = r));
  const g = await startTestGateway({
    hooks: { maxConcurrentRuns: 1, maxQueuedRuns: 1 },
    turn: async () => {
      await blocked;
      return { status: 'ok', reply: 'done' };
    },
  });
  try {
    assert.equal((await post(g.url, '/hooks/agent', { message: 'one' })).status, 202);
    assert.equal((await post(g.url, '/hooks/agent', { message: 'two' })).status, 202);
    const r = await post(g.url, '/hooks/agent', { message: 'three' });
    assertError(r, 503, 'overloaded');
    assert.match(r.headers.get('retry-after') ?? '', /^\d+$/);
    release();
    await g.finalRuns(2);
    assert.equal((await post(g.url, '/hooks/agent', { message: 'four' })).status, 202);
    await g.finalRuns(3);
  } finally {
    await g.close();
  }
});

test('hooks disabled: the plugin does not answer at all', async () => {
  const g = await startTestGateway({ hooks: { enabled: false } });
  try {
    const r = await post(g.url, '/hooks/wake', { text: 'x' });
    assert.equal(r.status, 404);
    assert.equal(r.body, 'host 404');
  } finally {
    await g.close();
  }
});

test('order of checks: query token before method, method before auth, auth before sub-path and body', async () => {
  assertError(
    await post(gw.url, '/hooks/nowhere?token=x', undefined, { method: 'GET', token: null }),
    400,
    'token_in_query',
  );
  assertError(
    await post(gw.url, '/hooks/nowhere', undefined, { method: 'GET', token: null }),
    405,
    'method_not_allowed',
  );
  assertError(await post(gw.url, '/hooks/wake', undefined, { rawBody: 'garbage', token: 'bad' }), 401, 'unauthorized');
  assertError(await post(gw.url, '/hooks/nowhere', undefined, { rawBody: 'garbage' }), 404, 'not_found');
});

test('every answer carries an x-request-id', async () => {
  const a = await post(gw.url, '/hooks/wake', { text: 'x' });
  const b = await post(gw.url, '/hooks/wake', { text: 'x' }, { token: 'bad' });
  assert.ok(a.headers.get('x-request-id'));
  assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
});

test('one log line per request, without token or payload content', async () => {
  // A gateway of its own: refusals beyond a few per second are counted rather than logged, and the
  // other tests here refuse plenty.
  await withGateway({}, async (own) => {
    const secret = 'payload-secret-9f8e7d';
    await post(own.url, `/hooks/wake`, { text: secret });
    await post(own.url, `/hooks/wake?token=${HOOK_TOKEN}`, { text: secret });
    const lines = own.rec.logs.filter((l) => l.msg === 'hook request');
    assert.equal(lines.length, 2);
    for (const l of lines) {
      assert.equal(l.fields?.method, 'POST');
      assert.equal(l.fields?.path, '/hooks/wake');
      assert.equal(typeof l.fields?.ms, 'number');
      assert.equal(l.fields?.client, '127.0.0.1');
      assert.ok(l.fields?.requestId);
    }
    for (const l of own.rec.logs) {
      const text = JSON.stringify(l);
      assert.ok(!text.includes(secret), 'payload leaked into the log');
      assert.ok(!text.includes(HOOK_TOKEN), 'token leaked into the log');
    }
    assert.deepEqual(
      lines.map((l) => l.fields?.status),
      [200, 400],
    );
  });
});

test('a raw HTTP/1.1 client gets a well-formed answer', async () => {
  const { port } = new URL(gw.url);
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/hooks/wake',
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('{"text":"raw"}');
  });
  assert.equal(status, 200);
});
