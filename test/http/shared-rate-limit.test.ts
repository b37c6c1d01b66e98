// A hook's rate limit shared by two instances on a real redis-server (hooks.sharedState): each counts
// locally and exchanges its counts with Redis in the background, so a request never waits on Redis
// for its limit, and once the counts are exchanged the other instance refuses what is over the limit.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { post, startTestGateway, type TestGateway } from '../helpers/recording-host.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { assertError, waitUntil } from '../helpers/common.ts';

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

const MAPPING = {
  id: 'deploys',
  match: { path: 'deploys' },
  action: 'wake',
  textTemplate: 'deploy',
  rateLimit: { requests: 4, perSeconds: 600 },
};

async function twoGateways(keyPrefix: string, mapping: Record<string, unknown> = MAPPING): Promise<TestGateway[]> {
  const start = () =>
    startTestGateway({
      gateway: { trustedProxies: ['127.0.0.1'] },
      hooks: { sharedState: { redis: redis.url, keyPrefix }, mappings: [mapping] },
    });
  const gws = await Promise.all([start(), start()]);
  await waitUntil(() => gws.every((g) => g.plugin.sharedStateUp === true), 'both on Redis');
  return gws;
}

const limitOf = (gw: TestGateway) => gw.plugin.snapshot().mappings[0]!.rateLimit!;

test('two instances share one limit: what one admitted, the other counts and refuses past', async () => {
  const [a, b] = await twoGateways('share:');
  try {
    for (let i = 0; i < 3; i++) assert.equal((await post(a!.url, '/hooks/deploys', {})).status, 200);
    // B hears of A's three within the exchange (at least once a second), without a request of its own.
    await waitUntil(() => b!.plugin.rateLimits.counted(limitOf(b!)) === 3, "B knows A's admissions");
    assert.equal((await post(b!.url, '/hooks/deploys', {})).status, 200);
    assertError(await post(b!.url, '/hooks/deploys', {}), 429, 'hook_rate_limited');
    await waitUntil(() => a!.plugin.rateLimits.counted(limitOf(a!)) === 4, "A knows B's admission");
    assertError(await post(a!.url, '/hooks/deploys', {}), 429, 'hook_rate_limited');
    // Redis holds the counts under the prefix, never more than the admissions.
    const keys = await observer.keys('share:rate:*');
    assert.deepEqual(keys, ['share:rate:hook:deploys']);
    const buckets = Object.values(await observer.hgetall(keys[0]!)).map(Number);
    assert.equal(
      buckets.reduce((x, y) => x + y, 0),
      4,
    );
    assert.equal([...a!.rec.events, ...b!.rec.events].length, 4);
  } finally {
    await Promise.all([a!.close(), b!.close()]);
  }
});

test('perClient is shared per client, once an instance has seen the client; another address keeps its own count', async () => {
  const [a, b] = await twoGateways('client:', {
    ...MAPPING,
    rateLimit: { requests: 2, perSeconds: 600, perClient: true },
  });
  const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
  try {
    assert.equal((await post(a!.url, '/hooks/deploys', {}, from('192.0.2.1'))).status, 200);
    assert.equal((await post(a!.url, '/hooks/deploys', {}, from('192.0.2.1'))).status, 200);
    // A client B has not seen yet is counted at B alone until the next exchange (the slack the
    // design allows); from then on B knows what A admitted.
    assert.equal((await post(b!.url, '/hooks/deploys', {}, from('192.0.2.1'))).status, 200);
    await waitUntil(() => b!.plugin.rateLimits.counted(limitOf(b!), '192.0.2.1') === 3, "B knows A's admissions");
    assertError(await post(b!.url, '/hooks/deploys', {}, from('192.0.2.1')), 429, 'hook_rate_limited');
    await waitUntil(() => a!.plugin.rateLimits.counted(limitOf(a!), '192.0.2.1') === 3, "A knows B's admission");
    assertError(await post(a!.url, '/hooks/deploys', {}, from('192.0.2.1')), 429, 'hook_rate_limited');
    assert.equal((await post(b!.url, '/hooks/deploys', {}, from('192.0.2.2'))).status, 200);
  } finally {
    await Promise.all([a!.close(), b!.close()]);
  }
});
