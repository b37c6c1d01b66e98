// The queue on Redis (hooks.queue) with real gateway processes and a real redis-server: doors
// (--role ingress) that only queue, assistants that take under a lease and carry out once, and what
// each answers when Redis is away, full, or restarted with AOF on (docs/guide/door-anywhere.md).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  eventually,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { Redis } from 'ioredis';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { QueueGateways, onceEach, texts, wake, type QueueConfig } from '../helpers/queue-gateways.ts';

/** Generous: the machine is shared, and gateways start through tsx. */
const LONG_MS = 120_000;

let redis: RedisServer;
const gateways = new QueueGateways();

before(async () => {
  redis = await startRedis();
});
after(async () => {
  await gateways.stopAll();
  await redis.stop();
});

/** A gateway in `role` on the queue; `dir` again restarts the same one (its taker name, its sessions). */
const gateway = (
  role: 'ingress' | 'assistant',
  queue: QueueConfig,
  dir?: string,
  hooks: Record<string, unknown> = {},
): Promise<SpawnedGateway> => gateways.start(role, queue, { ...(dir ? { dir } : {}), hooks });

test('two doors and two assistants under a flood, one assistant killed -9 and restarted: every acknowledged wake once', async () => {
  const queue = { redis: redis.url, name: 'flood', leaseSeconds: 5 };
  const doors = await Promise.all([gateway('ingress', queue), gateway('ingress', queue)]);
  const [first, b] = await Promise.all([gateway('assistant', queue), gateway('assistant', queue)]);
  let a = first!;
  const acknowledged = new Set<string>();
  let sent = 0;
  const TOTAL = 400;
  const sender = async (): Promise<void> => {
    while (sent < TOTAL) {
      const text = `flood ${sent++}`;
      const r = await wake(doors[sent % 2]!, text);
      if (r.status === 200) acknowledged.add(text);
      else assert.equal(r.status, 503, JSON.stringify(r.body));
    }
  };
  const senders = Array.from({ length: 6 }, sender);
  // Mid-flood: a's process dies without a word, whatever it holds.
  await eventually(async () => (await texts(a, 'flood ')).length > 20, LONG_MS);
  const aDir = a.stateDir;
  await a.stop('SIGKILL');
  await Promise.all(senders);
  a = await gateway('assistant', queue, aDir);
  await eventually(() => onceEach([a, b], 'flood ', acknowledged), LONG_MS);
  assert.equal(acknowledged.size, TOTAL);
  // Doors keep no sessions.
  for (const door of doors) assert.deepEqual(await texts(door, 'flood '), []);
});

test('with no assistant, the door accepts; one that comes back takes everything in arrival order', async () => {
  const queue = { redis: redis.url, name: 'absent' };
  const door = await gateway('ingress', queue);
  const sent: string[] = [];
  for (let i = 0; i < 50; i++) {
    const text = `absent ${String(i).padStart(3, '0')}`;
    assert.equal((await wake(door, text)).status, 200);
    sent.push(text);
  }
  const assistant = await gateway('assistant', queue);
  await eventually(async () => (await texts(assistant, 'absent ')).length === sent.length, LONG_MS).catch(
    async (err) => {
      throw new Error(
        `${(err as Error).message}: ${JSON.stringify(await texts(assistant, 'absent '))}\n${assistant.output()}`,
      );
    },
  );
  assert.deepEqual(await texts(assistant, 'absent '), sent);
});

test('past a budget that refuses, what the door acknowledged is digested by the assistant, never dropped', async () => {
  const queue = { redis: redis.url, name: 'budget' };
  const hooks = { endpoints: { agent: { budget: { runs: 1, perSeconds: 600, overflow: 'refuse' } } } };
  const door = await gateway('ingress', queue, undefined, hooks);
  const assistant = await gateway('assistant', queue, undefined, hooks);
  for (let i = 0; i < 3; i++) {
    const r = await door.hook('/hooks/agent', { message: `over budget ${i}`, deliver: false }, HOOK_TOKEN);
    assert.equal(r.status, 202, JSON.stringify(r.body));
  }
  const waiting = async (): Promise<number | undefined> => {
    const res = await fetch(`${assistant.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
    const m = /^hookgate_budget_digests_waiting (\S+)$/m.exec(await res.text());
    return m ? Number(m[1]) : undefined;
  };
  await eventually(async () => (await waiting()) === 2, LONG_MS).catch(async (err) => {
    throw new Error(`${(err as Error).message}: ${await waiting()} waiting\n${assistant.output()}`);
  });
});

test('an agent request gets its runId at the door, and the assistant runs it under that id', async () => {
  const queue = { redis: redis.url, name: 'runs' };
  const door = await gateway('ingress', queue);
  const assistant = await gateway('assistant', queue);
  const r = await door.hook('/hooks/agent', { message: 'run through the queue', deliver: false }, HOOK_TOKEN);
  assert.equal(r.status, 202);
  const { runId } = r.body as { runId: string };
  assert.match(runId, /^[0-9a-f-]{36}$/);
  await eventually(async () => {
    const res = await fetch(`${assistant.url}/api/runs/${runId}`, {
      headers: { authorization: `Bearer ${GATEWAY_TOKEN}` },
    });
    return res.status === 200 && ((await res.json()) as { status: string }).status === 'ok';
  }, LONG_MS).catch((err) => {
    throw new Error(`${(err as Error).message}\n${assistant.output()}\n${door.output()}`);
  });
});

test('past maxWaiting the door answers 503 queue_full, and accepts again once an assistant took them', async () => {
  const queue = { redis: redis.url, name: 'full', maxWaiting: 5 };
  const door = await gateway('ingress', queue);
  for (let i = 0; i < 5; i++) assert.equal((await wake(door, `full ${i}`)).status, 200);
  const refused = await fetch(`${door.url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'full 5', mode: 'next-heartbeat' }),
  });
  assert.equal(refused.status, 503);
  assert.equal(((await refused.json()) as { code: string }).code, 'queue_full');
  assert.equal(refused.headers.get('retry-after'), '30');
  const assistant = await gateway('assistant', queue);
  await eventually(async () => (await texts(assistant, 'full ')).length === 5, LONG_MS);
  assert.equal((await wake(door, 'full 6')).status, 200);
  await eventually(async () => (await texts(assistant, 'full ')).includes('full 6'), LONG_MS);
});

test('Redis killed: the door answers 503 queue_unavailable, acknowledges nothing it did not queue, and recovers', async () => {
  const own = await startRedis();
  try {
    const queue = { redis: own.url, name: 'outage', timeoutMs: 1000 };
    const door = await gateway('ingress', queue);
    const assistant = await gateway('assistant', queue);
    const acknowledged = new Set<string>();
    assert.equal((await wake(door, 'outage before')).status, 200);
    acknowledged.add('outage before');
    await own.kill();
    const r = await wake(door, 'outage during');
    assert.equal(r.status, 503);
    assert.equal((r.body as { code: string }).code, 'queue_unavailable');
    await own.start();
    await eventually(async () => {
      const again = await wake(door, 'outage after');
      if (again.status === 200) acknowledged.add('outage after');
      return again.status === 200;
    }, LONG_MS);
    // Redis restarted without persistence: what it had taken before is gone with it, which the
    // start warning (AOF off) says; what was acknowledged after is carried out, the 503'd never.
    await eventually(async () => (await texts(assistant, 'outage after')).length === 1, LONG_MS);
    assert.deepEqual(await texts(assistant, 'outage during'), []);
    // One warning for the outage, though the door holds the queue's and shared state's connections.
    const warnings = door.output().match(/on Redis is unavailable|on Redis unavailable/g) ?? [];
    assert.equal(warnings.length, 1, door.output());
    assert.match(door.output(), /the queue on Redis is back/);
    assert.match(door.output(), /AOF off/);
  } finally {
    await own.stop();
  }
});

test('Redis hung (it answers nothing): the door answers 503 queue_unavailable, then 200 once Redis answers', async () => {
  const queue = { redis: redis.url, name: 'hung', timeoutMs: 300 };
  const door = await gateway('ingress', queue);
  assert.equal((await wake(door, 'hung before')).status, 200);
  const sleeper = new Redis(redis.url);
  try {
    await sleeper.ping();
    // The server answers nobody while it sleeps; the door's add times out rather than waits.
    const sleeping = sleeper.call('DEBUG', 'SLEEP', '3');
    const r = await wake(door, 'hung during');
    assert.equal(r.status, 503);
    assert.equal((r.body as { code: string }).code, 'queue_unavailable');
    await sleeping;
  } finally {
    sleeper.disconnect();
  }
  await eventually(async () => (await wake(door, 'hung after')).status === 200, LONG_MS);
});

test('redis-server restarted with AOF on: every acknowledged action survives it and is carried out', async () => {
  const durable = await startRedis({ aof: true });
  try {
    const queue = { redis: durable.url, name: 'aof' };
    const door = await gateway('ingress', queue);
    const acknowledged = new Set<string>();
    for (let i = 0; i < 20; i++) {
      assert.equal((await wake(door, `aof ${i}`)).status, 200);
      acknowledged.add(`aof ${i}`);
    }
    assert.doesNotMatch(door.output(), /AOF off/);
    await durable.kill();
    await durable.start();
    const assistant = await gateway('assistant', queue);
    await eventually(() => onceEach([assistant], 'aof ', acknowledged), LONG_MS);
  } finally {
    await durable.stop();
  }
});

test('gateway.role "ingress" without hooks.queue does not start, naming the key', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { gateway: { role: 'ingress' } });
  await assert.rejects(spawnGateway(dir), /gateway\.role "ingress"/);
});
