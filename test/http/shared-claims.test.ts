// Dedupe claims on a real redis-server that hangs or holds what no instance wrote, over loopback
// HTTP with two plugins sharing it: a claim caught by DEBUG SLEEP is still finished (no second run
// at the other instance, no long wait), a stopped Redis (SIGSTOP) is marked down at its first
// timeout and requests go on locally, a planted claim without expiry is taken over, a planted
// unreadable answer is refused cleanly and logged without key or value, another body under a key
// is refused across instances, a claim held past the wait is a 409 at the other instance.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { post, startTestGateway, type TestGateway } from '../helpers/recording-host.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { assertError, waitUntil } from '../helpers/common.ts';
import { eventually } from '../helpers/spawn-gateway.ts';

let redis: RedisServer;
let observer: Redis;
before(async () => {
  redis = await startRedis();
  observer = new Redis(redis.url);
});
after(async () => {
  observer.disconnect();
  await redis.stop();
});

const key = (k: string) => ({ headers: { 'idempotency-key': k } });

async function twoGateways(keyPrefix: string): Promise<[TestGateway, TestGateway]> {
  const start = () => startTestGateway({ hooks: { sharedState: { redis: redis.url, keyPrefix } } });
  return Promise.all([start(), start()]);
}

async function closeAll(...gws: TestGateway[]): Promise<void> {
  await Promise.all(gws.map((g) => g.close()));
}

/** hookgate_shared_state_up as /metrics shows it. */
async function gauge(gw: TestGateway): Promise<string | undefined> {
  return /^hookgate_shared_state_up (\d)$/m.exec((await gw.plugin.metrics.exposition()).text)?.[1];
}

const warnings = (gw: TestGateway, pattern: RegExp) =>
  gw.rec.logs.filter((l) => l.level === 'warn' && pattern.test(l.msg)).length;

test('DEBUG SLEEP during a claim: the instance goes on locally, and the retry at the other is a duplicate at once', async () => {
  const [a, b] = await twoGateways('sleep:');
  try {
    await observer.ping();
    const sleeping = observer.call('DEBUG', 'SLEEP', '1.5');
    const first = await post(a.url, '/hooks/agent', { message: 'deploy 812', deliver: false }, key('sleep-1'));
    assert.equal(first.status, 202, JSON.stringify(first.body));
    assert.equal(warnings(a, /shared state on Redis unavailable/), 1, 'the timeout marked shared state down');
    await sleeping;
    const t = Date.now();
    const retry = await post(b.url, '/hooks/agent', { message: 'deploy 812', deliver: false }, key('sleep-1'));
    assert.deepEqual(retry.body, { ...first.body, duplicate: true });
    assert.ok(Date.now() - t < 10_000, `the retry waited ${Date.now() - t} ms`);
    assert.equal([...a.rec.runUpdates, ...b.rec.runUpdates].filter((u) => u.status === 'queued').length, 1);
    await waitUntil(() => a.plugin.sharedStateUp === true, 'a back on Redis', 5000);
  } finally {
    await closeAll(a, b);
  }
});

test('Redis stopped (SIGSTOP): marked down at the first timeout, one warning, requests go on locally; back when it answers', async () => {
  const gw = await startTestGateway({ hooks: { sharedState: { redis: redis.url, keyPrefix: 'stop:' } } });
  const scripts = async (): Promise<number> => {
    const stats = String(await observer.info('commandstats'));
    return [...stats.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  };
  try {
    assert.equal(await gauge(gw), '1');
    const before = await scripts();
    process.kill(redis.pid!, 'SIGSTOP');
    try {
      const first = await post(gw.url, '/hooks/wake', { text: 'stopped 0' }, key('stop-0'));
      assert.equal(first.status, 200);
      assert.equal(gw.plugin.sharedStateUp, false);
      assert.equal(await gauge(gw), '0');
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          post(gw.url, '/hooks/wake', { text: `stopped ${i + 1}` }, key(`stop-${i + 1}`)),
        ),
      );
      assert.deepEqual(new Set(answers.map((r) => r.status)), new Set([200]));
      assert.equal(gw.rec.events.length, 51);
      // Local keys hold meanwhile.
      assert.equal((await post(gw.url, '/hooks/wake', { text: 'stopped 7' }, key('stop-7'))).body.duplicate, true);
    } finally {
      process.kill(redis.pid!, 'SIGCONT');
    }
    await eventually(async () => (await gauge(gw)) === '1');
    assert.equal(warnings(gw, /shared state on Redis unavailable/), 1);
    assert.equal(gw.rec.logs.filter((l) => /shared state on Redis is back/.test(l.msg)).length, 1);
    // While down no request sent Redis a command: the first one's claim and its answer, no more.
    assert.ok((await scripts()) - before <= 4, `${(await scripts()) - before} scripts ran`);
    const after = await post(gw.url, '/hooks/wake', { text: 'after' }, key('after-1'));
    assert.equal(after.status, 200);
    assert.ok(await observer.exists('stop:dedupe:4:wake:after-1'), 'keys go to Redis again');
  } finally {
    await gw.close();
  }
});

test('a planted claim without an expiry does not block its key', async () => {
  const gw = await startTestGateway({ hooks: { sharedState: { redis: redis.url, keyPrefix: 'planted:' } } });
  try {
    await observer.set('planted:dedupe:4:wake:planted-1', 'Pplanted-by-hand');
    const t = Date.now();
    const r = await post(gw.url, '/hooks/wake', { text: 'planted' }, key('planted-1'));
    assert.equal(r.status, 200);
    assert.equal(r.body.duplicate, undefined);
    assert.ok(Date.now() - t < 5000, `waited ${Date.now() - t} ms`);
    assert.equal(gw.rec.events.length, 1);
    await eventually(async () => (await observer.get('planted:dedupe:4:wake:planted-1'))?.startsWith('{'));
  } finally {
    await gw.close();
  }
});

test('a planted unreadable answer is refused with a JSON 500 and logged by scope, without key or value', async () => {
  const gw = await startTestGateway({ hooks: { sharedState: { redis: redis.url, keyPrefix: 'bad:' } } });
  try {
    await observer.set('bad:dedupe:5:agent:bad-key-1', '{"at":1,"status":9999,"body":{"canary":"x"}}');
    for (let i = 0; i < 3; i++) {
      const r = await post(gw.url, '/hooks/agent', { message: 'payload-canary', deliver: false }, key('bad-key-1'));
      assertError(r, 500, 'internal_error', /unreadable/);
    }
    assert.equal(gw.rec.runUpdates.length, 0, 'nothing run');
    const lines = gw.rec.logs.filter((l) => /dedupe record on Redis is unreadable/.test(l.msg));
    assert.equal(lines.length, 1, 'rate-limited');
    assert.deepEqual(lines[0]!.fields, { scope: 'agent', count: 1 });
    const all = JSON.stringify(gw.rec.logs);
    for (const secret of ['bad-key-1', 'canary', '9999']) assert.ok(!all.includes(secret), secret);
  } finally {
    await gw.close();
  }
});

test('another body under a key already used at another instance is 422 there; the same body is a duplicate', async () => {
  const [a, b] = await twoGateways('reuse:');
  try {
    assert.equal((await post(a.url, '/hooks/wake', { text: 'v1' }, key('reuse-1'))).status, 200);
    assertError(await post(b.url, '/hooks/wake', { text: 'v2' }, key('reuse-1')), 422, 'idempotency_key_reused');
    assert.equal((await post(b.url, '/hooks/wake', { text: 'v1' }, key('reuse-1'))).body.duplicate, true);
    assert.equal(a.rec.events.length + b.rec.events.length, 1);
  } finally {
    await closeAll(a, b);
  }
});

test('a first request held in flight at one instance past the wait: the retry at the other is 409 with Retry-After, never a second run', async () => {
  let accept: () => void = () => {};
  const held = new Promise<void>((resolve) => (accept = resolve));
  const hooks = { sharedState: { redis: redis.url, keyPrefix: 'busy:' } };
  const a = await startTestGateway({ hooks, runUpdate: (r) => (r.status === 'queued' ? held : undefined) });
  const b = await startTestGateway({ hooks });
  try {
    const first = post(a.url, '/hooks/agent', { message: 'slow', deliver: false }, key('busy-1'));
    await waitUntil(() => a.rec.runUpdates.length === 1, 'the first request in flight at a');
    const retry = await post(b.url, '/hooks/agent', { message: 'slow', deliver: false }, key('busy-1'));
    assertError(retry, 409, 'idempotency_key_in_flight');
    assert.equal(retry.headers?.get('retry-after'), '5');
    accept();
    assert.equal((await first).status, 202);
    const later = await post(b.url, '/hooks/agent', { message: 'slow', deliver: false }, key('busy-1'));
    assert.equal(later.body.duplicate, true);
    assert.equal(b.rec.runUpdates.length, 0, 'nothing run at b');
  } finally {
    await closeAll(a, b);
  }
});
