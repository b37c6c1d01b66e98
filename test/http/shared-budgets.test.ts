// A budget shared by two instances on a real redis-server (hooks.sharedState): each counts locally
// and exchanges its counts with Redis in the background (at least once a second), so once they are
// exchanged the other instance knows the window's runs and acts past the budget as its overflow says.
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

async function runsCounted(gw: TestGateway): Promise<number> {
  const answer = (await gw.plugin.admin({
    method: 'GET',
    parts: ['hooks'],
    query: new URLSearchParams(),
    body: () => Promise.resolve(undefined),
  })) as { hooks: { name: string; budgets?: { runs: number }[] }[] };
  return answer.hooks.find((h) => h.name === 'agent')!.budgets![0]!.runs;
}

test('two instances share one budget: what one ran, the other counts, and refuses past it', async () => {
  const start = () =>
    startTestGateway({
      hooks: {
        sharedState: { redis: redis.url, keyPrefix: 'spend:' },
        endpoints: { agent: { budget: { runs: 3, perSeconds: 600, overflow: 'refuse' } } },
      },
    });
  const [a, b] = await Promise.all([start(), start()]);
  try {
    await waitUntil(() => a.plugin.sharedStateUp === true && b.plugin.sharedStateUp === true, 'both on Redis');
    for (const i of [1, 2])
      assert.equal((await post(a.url, '/hooks/agent', { message: `a${i}`, deliver: false })).status, 202);
    // B hears of A's two runs within the exchange, without a request of its own.
    await waitUntil(async () => (await runsCounted(b)) === 2, "B knows A's runs");
    assert.equal((await post(b.url, '/hooks/agent', { message: 'b1', deliver: false })).status, 202);
    assertError(await post(b.url, '/hooks/agent', { message: 'b2', deliver: false }), 429, 'budget_exhausted');
    await waitUntil(async () => (await runsCounted(a)) === 3, "A knows B's run");
    assertError(await post(a.url, '/hooks/agent', { message: 'a3', deliver: false }), 429, 'budget_exhausted');
    assert.equal(a.rec.turns.length + b.rec.turns.length, 3, 'three runs in all');
    const kept = await observer.hgetall('spend:budget:hook:agent');
    assert.equal(Number(kept.runs), 3);
    assert.ok(Number(await observer.pttl('spend:budget:hook:agent')) > 0, 'it expires with its window');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
