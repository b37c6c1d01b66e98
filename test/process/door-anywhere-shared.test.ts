// What is shared after the 200 with the queue on Redis (hooks.queue), with real gateway processes
// and a real redis-server: a failure recorded by one assistant is listed by the door and by another
// assistant, replayed from two instances at once into exactly one run, dismissed everywhere; a
// run's state answers at the door (queued, then its taker's); an action the assistant's own policies
// refuse is kept as a failure the door lists and replays in bulk (docs/guide/door-anywhere.md,
// "Shared after the 200").
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { GATEWAY_TOKEN, eventually, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.ts';
import { QueueGateways } from '../helpers/queue-gateways.ts';

/** Generous: the machine is shared, and gateways start through tsx. */
const LONG_MS = 120_000;

let redis: RedisServer;
let provider: FakeProvider;
const gateways = new QueueGateways();

before(async () => {
  redis = await startRedis();
  // Refuses every prompt with a 400, which is not tried again: each run fails at its first try.
  provider = await startFakeProvider((_req, res) => {
    res.statusCode = 400;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ error: { message: 'the model refuses this prompt' } }));
  });
});
after(async () => {
  await gateways.stopAll();
  await provider.close();
  await redis.stop();
});

/** Every gateway's models: the refusing provider. */
const models = () => ({
  models: { providers: { fake: { baseUrl: provider.baseUrl, apiKey: 'sk-shared-failures-key' } } },
  agents: { defaults: { models: ['fake/m1'] }, list: [{ id: 'main', default: true }] },
});

async function post(gw: SpawnedGateway, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(gw.url + p, { method: 'POST', headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

async function run(gw: SpawnedGateway, runId: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}/api/runs/${runId}`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

/** The failures an instance lists (all states). */
async function failures(gw: SpawnedGateway): Promise<any[]> {
  return (await gw.admin('/api/failures?state=all')).failures;
}

/** Nothing waits in the queue and nothing is held by a taker: no run is still to start. */
async function queueDrained(name: string): Promise<boolean> {
  const client = new Redis(redis.url, { lazyConnect: true });
  try {
    await client.connect();
    const stream = `hookgate:queue:${name}`;
    const [length, pending] = await Promise.all([client.xlen(stream), client.xpending(stream, 'takers')]);
    return length === 0 && (pending as [number])[0] === 0;
  } finally {
    client.disconnect();
  }
}

test('a failure recorded by one assistant is listed everywhere, replayed once from two instances at once, dismissed everywhere', async () => {
  const queue = { redis: redis.url, name: 'shared' };
  const door = await gateways.start('ingress', queue, { extra: models() });
  const r = await door.hook('/hooks/agent', { message: 'fails at the model', model: 'fake/m1', name: 'Shared' });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const { runId } = r.body as { runId: string };

  // No assistant yet: the door answers the run's state from Redis.
  const queued = await run(door, runId);
  assert.equal(queued.status, 200, JSON.stringify(queued.body));
  assert.equal(queued.body.status, 'queued');
  assert.equal(queued.body.hook, 'agent');
  assert.equal(queued.body.prompt, undefined);

  const a = await gateways.start('assistant', queue, { extra: models() });
  const failed = await eventually(async () => {
    const listed = await failures(door);
    return listed.length === 1 && listed[0];
  }, LONG_MS).catch((err) => {
    throw new Error(`${(err as Error).message}\n${a.output()}\n${door.output()}`);
  });
  assert.equal(failed.runId, runId);
  assert.equal(failed.state, 'open');
  assert.match(failed.lastError, /the model refuses/);
  assert.equal(failed.action, undefined, 'the stored action is not shown');
  // The door's overview counts it under the hook that accepted it.
  const overview = await door.admin('/api/overview');
  assert.equal(overview.hooks.find((h: any) => h.name === 'agent').openFailures, 1);
  // The taker's final state, at the door.
  const ended = await eventually(async () => {
    const state = await run(door, runId);
    return state.body.status === 'error' && state.body;
  }, LONG_MS);
  assert.equal(ended.failureId, failed.id);
  assert.ok(!JSON.stringify(ended).includes('fails at the model'), 'no prompt in the shared run state');

  // Another assistant, started after, lists the same failure.
  const b = await gateways.start('assistant', queue, { extra: models() });
  assert.deepEqual(await failures(b), await failures(door));

  // Replayed from b and from the door at the same moment: one run, both answers name it.
  const calls = provider.requests.length;
  const [fromB, fromDoor] = await Promise.all([
    post(b, `/api/failures/${failed.id}/replay`),
    post(door, `/api/failures/${failed.id}/replay`),
  ]);
  assert.equal(fromB.status, 202, JSON.stringify(fromB.body));
  assert.equal(fromDoor.status, 202, JSON.stringify(fromDoor.body));
  assert.equal(fromB.body.runId, fromDoor.body.runId);
  assert.equal([fromB.body.duplicate, fromDoor.body.duplicate].filter((d) => d === true).length, 1);
  const replayId = fromB.body.runId as string;
  assert.notEqual(replayId, runId);

  // The replay ran (and failed again) on whichever assistant took it, once.
  const again = await eventually(async () => {
    const listed = await failures(door);
    return listed.length === 2 && listed.find((f) => f.runId === replayId);
  }, LONG_MS);
  await eventually(() => queueDrained('shared'), LONG_MS);
  assert.equal(provider.requests.length - calls, 1, 'the replayed run called the model once');
  const first = (await failures(a)).find((f) => f.id === failed.id);
  assert.equal(first.state, 'replayed');
  assert.equal(first.replayedBy, replayId);
  // A third ask is answered with the same run, and starts nothing.
  const third = await post(a, `/api/failures/${failed.id}/replay`);
  assert.equal(third.body.runId, replayId);
  assert.equal(third.body.duplicate, true);

  // Dismissed at a, dismissed at the door and at b.
  const dismissed = await post(a, `/api/failures/${again.id}/dismiss`);
  assert.equal(dismissed.status, 200, JSON.stringify(dismissed.body));
  for (const gw of [door, b]) {
    const open = (await gw.admin('/api/failures')).failures;
    assert.deepEqual(open, [], 'no open failure is left');
    assert.equal((await failures(gw)).find((f) => f.id === again.id).state, 'dismissed');
  }
  // The door lists the runs known on Redis: both, the newest last.
  const listed = (await door.admin('/api/runs')).runs.map((x: any) => x.runId);
  assert.deepEqual(listed, [runId, replayId]);
});

test("an action the door acknowledged and the assistant's own policies refuse is kept as a failure the door lists", async () => {
  const queue = { redis: redis.url, name: 'refused' };
  const door = await gateways.start('ingress', queue, { extra: models(), hooks: { allowRequestSessionKey: true } });
  const assistant = await gateways.start('assistant', queue, { extra: models() });
  const r = await door.hook('/hooks/agent', {
    message: 'a session the assistant does not allow',
    sessionKey: 'hook:chosen',
    model: 'fake/m1',
  });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const failed = await eventually(async () => {
    const listed = await failures(door);
    return listed.length === 1 && listed[0];
  }, LONG_MS).catch((err) => {
    throw new Error(`${(err as Error).message}\n${assistant.output()}`);
  });
  assert.equal(failed.runId, r.body.runId);
  assert.equal(failed.hook, 'agent');
  assert.equal(failed.state, 'open');
  assert.match(failed.lastError, /session_key_disabled/);
  assert.ok(!failed.lastError.includes('a session the assistant does not allow'));
  assert.match(assistant.output(), /refused here and is kept as a failure/);

  // Replayed in bulk from the door: queued again as the door rendered it, under a new run id; the
  // assistant still refuses it, and keeps that as a failure of its own.
  const res = await fetch(`${door.url}/api/replay`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ failed: true, hook: 'agent' }),
  });
  const bulk = (await res.json()) as { replayed: number; runIds: string[] };
  assert.equal(res.status, 200, JSON.stringify(bulk));
  assert.equal(bulk.replayed, 1);
  const again = await eventually(async () => {
    const listed = await failures(door);
    return listed.length === 2 && listed.find((f) => f.runId === bulk.runIds[0]);
  }, LONG_MS);
  assert.equal(again.state, 'open');
  assert.equal((await failures(door)).find((f) => f.id === failed.id).replayedBy, bulk.runIds[0]);
});
