// Two real gateway processes behind one real redis-server (hooks.sharedState): lockouts and dedupe
// keys hold across both, a Redis outage fails no request and is logged once, and sharing resumes
// when Redis is back. Clients are told apart by X-Forwarded-For (the test is the trusted proxy).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  MAIN,
  eventually,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { Redis } from 'ioredis';
import { waitUntil } from '../helpers/common.ts';

const PASSWORD = 'redis-password-not-for-logs-5f1c';
let redis: RedisServer;
/** One pair for the whole file (tests use their own addresses and keys); the outage test comes last. */
let a: SpawnedGateway;
let b: SpawnedGateway;
/** The test's own connection, to look at what Redis holds. */
let direct: Redis;
before(async () => {
  redis = await startRedis({ password: PASSWORD });
  direct = new Redis(redis.url);
  // The gateways read the URL from the environment ("${NAME}" in the config), as a deployment would.
  process.env.HOOKGATE_TEST_REDIS_URL = redis.url;
  [a, b] = await twoGateways('proc:');
  // A start waits a second for Redis; on a busy machine it may come up only after that.
  for (const gw of [a, b]) await waitUntil(async () => (await sharedStateUp(gw)) === 1, 'shared state up');
});
after(async () => {
  direct.disconnect();
  assert.deepEqual(await Promise.all([a.stop(), b.stop()]), [0, 0], 'both stop cleanly');
  await redis.stop();
});

const LIMITS = { maxFailures: 4, windowSeconds: 60, lockoutSeconds: 60 };

/** Two gateways on the same Redis and key prefix. */
async function twoGateways(keyPrefix: string): Promise<[SpawnedGateway, SpawnedGateway]> {
  const start = async (): Promise<SpawnedGateway> => {
    const dir = await tempStateDir();
    await writeConfig(dir, {
      hooks: { authRateLimit: LIMITS, sharedState: { redis: '${HOOKGATE_TEST_REDIS_URL}', keyPrefix } },
      gateway: { trustedProxies: ['127.0.0.1'] },
    });
    return spawnGateway(dir);
  };
  return Promise.all([start(), start()]);
}

async function post(
  gw: SpawnedGateway,
  path: string,
  body: unknown,
  opts: { token?: string; from?: string; key?: string } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? HOOK_TOKEN}` };
  if (opts.from) headers['x-forwarded-for'] = opts.from;
  if (opts.key) headers['idempotency-key'] = opts.key;
  const res = await fetch(gw.url + path, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

const wake = (text: string): unknown => ({ text, mode: 'next-heartbeat' });

/** The value of hookgate_shared_state_up in the gateway's /metrics. */
async function sharedStateUp(gw: SpawnedGateway): Promise<number | undefined> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const m = /^hookgate_shared_state_up (\d)$/m.exec(await res.text());
  return m ? Number(m[1]) : undefined;
}

async function eventsWithText(gw: SpawnedGateway, text: string): Promise<number> {
  const { entries } = await gw.admin(`/api/sessions/${MAIN}/history`);
  return entries.filter((e: any) => e.kind === 'system-event' && e.text === text).length;
}

/** Waits until the address is refused with 429 by both, even with the right token. */
async function lockedOnBoth(gateways: SpawnedGateway[], from: string): Promise<void> {
  for (const gw of gateways) {
    await eventually(async () => (await post(gw, '/hooks/wake', wake('probe'), { from })).status === 429, 10_000);
  }
}

test('failures split across two instances lock the address on both; its right token is refused by both', async () => {
  const from = '203.0.113.7';
  assert.equal((await post(a, '/hooks/wake', wake('x'), { from, token: 'wrong-1' })).status, 401);
  assert.equal((await post(b, '/hooks/wake', wake('x'), { from, token: 'wrong-2' })).status, 401);
  assert.equal((await post(a, '/hooks/wake', wake('x'), { from, token: 'wrong-3' })).status, 401);
  // Each instance alone has seen two failures of four: only Redis has counted them all.
  assert.equal((await post(b, '/hooks/wake', wake('x'), { from, token: 'wrong-4' })).status, 401);
  await lockedOnBoth([a, b], from);
  assert.equal(await direct.exists(`proc:auth:lock:${from}`), 1, 'the lock as Redis keeps it');
  for (const gw of [a, b]) {
    const r = await post(gw, '/hooks/wake', wake('right token, locked address'), { from });
    assert.equal(r.status, 429);
    assert.equal(r.body.code, 'rate_limited');
  }
  // Another address is not locked.
  assert.equal((await post(a, '/hooks/wake', wake('other address'), { from: '203.0.113.8' })).status, 200);
  assert.equal(await eventsWithText(a, 'right token, locked address'), 0);
  assert.equal(await eventsWithText(b, 'right token, locked address'), 0);
});

/** Rewrites a gateway's config with these hook tokens and waits until it has reloaded `reloads` times. */
async function rotate(gw: SpawnedGateway, tokens: string[], reloads: number): Promise<void> {
  await writeConfig(gw.stateDir, {
    hooks: {
      token: tokens,
      authRateLimit: LIMITS,
      sharedState: { redis: '${HOOKGATE_TEST_REDIS_URL}', keyPrefix: 'proc:' },
    },
    gateway: { trustedProxies: ['127.0.0.1'] },
  });
  await eventually(async () => gw.output().split('"config reloaded"').length > reloads, 10_000);
}

test('a rotation on both instances: the early token is forgiven on both, the retired one never locks', async () => {
  const from = '203.0.113.20';
  const NEW = 'rotated-in-token-0123456789';
  // The sender switched early, alternating instances: repeated, its new token locks it on both.
  for (const gw of [a, b, a, b]) {
    assert.equal((await post(gw, '/hooks/wake', wake('x'), { from, token: NEW })).status, 401);
  }
  await lockedOnBoth([a, b], from);
  // The reload on both makes it valid: its failures are forgiven in Redis and the lock is lifted everywhere.
  await Promise.all([rotate(a, [HOOK_TOKEN, NEW], 1), rotate(b, [HOOK_TOKEN, NEW], 1)]);
  for (const gw of [a, b]) {
    await eventually(
      async () => (await post(gw, '/hooks/wake', wake('new token'), { from, token: NEW })).status === 200,
    );
  }
  // Rotated away again: repeated on both, for longer than maxFailures, it is refused but not counted.
  await Promise.all([rotate(a, [HOOK_TOKEN], 2), rotate(b, [HOOK_TOKEN], 2)]);
  for (let i = 0; i < 6; i++) {
    for (const gw of [a, b]) {
      assert.equal((await post(gw, '/hooks/wake', wake('x'), { from, token: NEW })).status, 401);
    }
  }
  assert.equal((await post(a, '/hooks/wake', wake('after rotation'), { from })).status, 200);
  assert.equal((await post(b, '/hooks/wake', wake('after rotation'), { from })).status, 200);
});

test('the same delivery sent to both at the same moment runs once', async () => {
  for (let round = 0; round < 5; round++) {
    const text = `delivered once ${round}`;
    const key = `same-moment-${round}`;
    const [ra, rb] = await Promise.all([
      post(a, '/hooks/wake', wake(text), { key }),
      post(b, '/hooks/wake', wake(text), { key }),
    ]);
    assert.equal(ra.status, 200);
    assert.equal(rb.status, 200);
    assert.equal([ra, rb].filter((r) => r.body.duplicate === true).length, 1, `round ${round}: one duplicate`);
    assert.equal((await eventsWithText(a, text)) + (await eventsWithText(b, text)), 1, `round ${round}: one event`);
  }
  const [ra, rb] = await Promise.all([
    post(a, '/hooks/agent', { message: 'one run', deliver: false }, { key: 'agent-once' }),
    post(b, '/hooks/agent', { message: 'one run', deliver: false }, { key: 'agent-once' }),
  ]);
  assert.equal(ra.status, 202);
  assert.equal(rb.status, 202);
  assert.equal(ra.body.runId, rb.body.runId, 'both answered with the one run');
  assert.equal([ra, rb].filter((r) => r.body.duplicate === true).length, 1);
});

test('Redis killed mid-load: every request succeeds, one warning each; Redis back: sharing resumes', async () => {
  const statuses: number[] = [];
  let sent = 0;
  let stop = false;
  const load = async (gw: SpawnedGateway): Promise<void> => {
    while (!stop) {
      const n = sent++;
      const r = await post(gw, '/hooks/wake', wake(`load ${n}`), n % 2 ? { key: `load-${n}` } : {});
      statuses.push(r.status);
    }
  };
  for (const gw of [a, b]) assert.equal(await sharedStateUp(gw), 1, '/metrics: shared state up');
  const warnings = (gw: SpawnedGateway): number => gw.output().match(/shared state on Redis unavailable/g)?.length ?? 0;
  const warnedBefore = [a, b].map(warnings);
  direct.disconnect();
  const loads = [load(a), load(b), load(a), load(b)];
  await waitUntil(() => statuses.length >= 20, 'load under way');
  await redis.kill();
  // Every instance has seen the outage, and requests went on after it.
  await waitUntil(() => warnings(a) > warnedBefore[0]! && warnings(b) > warnedBefore[1]!, 'the outage seen');
  const seenAt = statuses.length;
  await waitUntil(() => statuses.length >= seenAt + 20, 'requests during the outage');
  stop = true;
  await Promise.all(loads);
  assert.ok(statuses.length > 20, `${statuses.length} requests`);
  assert.deepEqual(
    statuses.filter((s) => s !== 200),
    [],
  );
  for (const gw of [a, b]) {
    assert.equal(warnings(gw), warnedBefore[gw === a ? 0 : 1]! + 1, gw.output());
    assert.equal(await sharedStateUp(gw), 0, '/metrics: shared state down');
  }

  await redis.start();
  for (const gw of [a, b]) await eventually(async () => /shared state on Redis is back/.test(gw.output()), 10_000);
  for (const gw of [a, b]) assert.equal(await sharedStateUp(gw), 1, '/metrics: shared state up again');
  const from = '203.0.113.30';
  for (let i = 0; i < 4; i++) {
    const gw = i % 2 ? b : a;
    assert.equal((await post(gw, '/hooks/wake', wake('x'), { from, token: `wrong-${i}` })).status, 401);
  }
  await lockedOnBoth([a, b], from);
  for (const gw of [a, b]) {
    assert.ok(!gw.output().includes(PASSWORD), 'the Redis password is never logged');
    assert.equal(warnings(gw), warnedBefore[gw === a ? 0 : 1]! + 1);
  }
});
