// Held actions shared through Redis with the queue (hooks.queue), with real gateway processes and a
// real redis-server: a paused hook's requests are held at the door in Redis, counted the same by
// every instance, bounded by hooks.maxHeld across them all, and a resume from any instance sends
// them back through the queue in arrival order (docs/guide/door-anywhere.md, "Shared after the 200").
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { GATEWAY_TOKEN, HOOK_TOKEN, eventually, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { QueueGateways, onceEach, texts, wake } from '../helpers/queue-gateways.ts';

/** Generous: the machine is shared, and gateways start through tsx. */
const LONG_MS = 120_000;

const gateways = new QueueGateways();
const servers: RedisServer[] = [];

/** A Redis of the test's own: pauses are shared by everything on one Redis, whatever the queue. */
async function ownRedis(): Promise<RedisServer> {
  const server = await startRedis();
  servers.push(server);
  return server;
}

after(async () => {
  await gateways.stopAll();
  await Promise.all(servers.map((s) => s.stop()));
});

const post = (gw: SpawnedGateway, p: string) =>
  fetch(gw.url + p, { method: 'POST', headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });

/** The wake hook as GET /api/hooks shows it on this instance. */
async function wakeHook(gw: SpawnedGateway): Promise<{ paused: boolean; held: number }> {
  const { hooks } = (await gw.admin('/api/hooks')) as { hooks: { name: string; paused: boolean; held: number }[] };
  return hooks.find((h) => h.name === 'wake')!;
}

/** Each assistant's texts with `prefix`, as the numbers after it: each list must be in arrival order. */
async function numbersSeen(assistants: SpawnedGateway[], prefix: string): Promise<number[][]> {
  return Promise.all(
    assistants.map(async (gw) => (await texts(gw, prefix)).map((t) => Number(t.slice(prefix.length)))),
  );
}

const ascending = (list: number[]): boolean => list.every((n, i) => i === 0 || list[i - 1]! < n);

test('a pause from a door is honoured by every assistant: held at the door, counted alike everywhere, resumed from an assistant in order', async () => {
  const queue = { redis: (await ownRedis()).url, name: 'held' };
  const door = await gateways.start('ingress', queue);
  const assistants = await Promise.all([gateways.start('assistant', queue), gateways.start('assistant', queue)]);
  assert.equal((await post(door, '/api/hooks/wake/pause')).status, 200);
  for (const gw of assistants) await eventually(async () => (await wakeHook(gw)).paused, LONG_MS);
  const acknowledged = new Set<string>();
  for (let i = 0; i < 10; i++) {
    const r = await wake(door, `held ${i}`);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.ok, true);
    assert.equal(r.body.held, true);
    assert.match(r.body.requestId, /\S/);
    acknowledged.add(`held ${i}`);
  }
  // Every instance reads the one count in Redis: the same, at once.
  for (const gw of [door, ...assistants]) assert.equal((await wakeHook(gw)).held, 10, gw.url);
  for (const gw of assistants) assert.deepEqual(await texts(gw, 'held '), []);
  // Resumed from an assistant, not the door; the door keeps accepting meanwhile.
  assert.equal((await post(assistants[1]!, '/api/hooks/wake/resume')).status, 200);
  for (let i = 10; i < 15; i++) {
    const r = await wake(door, `held ${i}`);
    // Held behind the rest while the door has not heard of the resume or they are still held.
    assert.ok(r.status === 200 || (r.status === 202 && r.body.held === true), JSON.stringify(r.body));
    acknowledged.add(`held ${i}`);
  }
  await eventually(() => onceEach(assistants, 'held ', acknowledged), LONG_MS).catch(async (err) => {
    throw new Error(`${(err as Error).message}: ${JSON.stringify(await numbersSeen(assistants, 'held '))}`);
  });
  // Each assistant took its share in arrival order (the newer requests after the held ones).
  for (const seen of await numbersSeen(assistants, 'held ')) assert.ok(ascending(seen), JSON.stringify(seen));
  for (const gw of [door, ...assistants]) assert.equal((await wakeHook(gw)).held, 0, gw.url);
  assert.deepEqual(await texts(door, 'held '), []);
});

test('hooks.maxHeld bounds what every door holds together: past it 503 paused_full with Retry-After', async () => {
  const queue = { redis: (await ownRedis()).url, name: 'held-cap' };
  const hooks = { maxHeld: 3 };
  const doors = await Promise.all([
    gateways.start('ingress', queue, { hooks }),
    gateways.start('ingress', queue, { hooks }),
  ]);
  assert.equal((await post(doors[0]!, '/api/hooks/wake/pause')).status, 200);
  await eventually(async () => (await wakeHook(doors[1]!)).paused, LONG_MS);
  for (const [i, door] of [doors[0]!, doors[1]!, doors[0]!].entries()) {
    const r = await wake(door, `cap ${i}`);
    assert.equal(r.status, 202, JSON.stringify(r.body));
  }
  const refused = await fetch(`${doors[1]!.url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'cap 3', mode: 'next-heartbeat' }),
  });
  assert.equal(refused.status, 503);
  assert.equal(((await refused.json()) as { code: string }).code, 'paused_full');
  assert.equal(refused.headers.get('retry-after'), '30');
  for (const door of doors) assert.equal((await wakeHook(door)).held, 3);
});

test('an assistant that takes an action of a hook paused meanwhile hands it back to Redis, in its place', async () => {
  const queue = { redis: (await ownRedis()).url, name: 'held-taken' };
  const door = await gateways.start('ingress', queue);
  // Queued while the hook ran and no assistant was there; then paused; then one more, held.
  for (let i = 0; i < 3; i++) assert.equal((await wake(door, `taken ${i}`)).status, 200);
  assert.equal((await post(door, '/api/hooks/wake/pause')).status, 200);
  const r = await wake(door, 'taken 3');
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const assistant = await gateways.start('assistant', queue);
  // The assistant knows of the pause before it takes: all four held, the three it took among them.
  await eventually(async () => (await wakeHook(door)).held === 4, LONG_MS).catch(async (err) => {
    throw new Error(`${(err as Error).message}: ${JSON.stringify(await wakeHook(door))}\n${assistant.output()}`);
  });
  assert.deepEqual(await texts(assistant, 'taken '), []);
  assert.equal((await post(door, '/api/hooks/wake/resume')).status, 200);
  await eventually(async () => (await texts(assistant, 'taken ')).length === 4, LONG_MS);
  // The three taken first go back ahead of the one that arrived after them.
  assert.deepEqual(await texts(assistant, 'taken '), ['taken 0', 'taken 1', 'taken 2', 'taken 3']);
});

test('a run waiting for its retry in Redis: its assistant killed -9, the other carries out the retry at its time, once', async () => {
  const server = await ownRedis();
  const queue = { redis: server.url, name: 'retries' };
  // The first call fails as an overloaded provider does (retried after its Retry-After), the rest pass.
  const provider = await startFakeProvider((req, res) => {
    if (provider.requests.length === 1) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '6' });
      res.end('{"error":{"message":"overloaded"}}');
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'made it' } }] }));
  });
  try {
    const hooks = { retry: { attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 30 } };
    const extra = {
      models: { providers: { fake: { baseUrl: provider.baseUrl } } },
      agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
    };
    const door = await gateways.start('ingress', queue, { hooks, extra });
    const first = await gateways.start('assistant', queue, { hooks, extra });
    const r = await door.hook('/hooks/agent', { message: 'try me twice', model: 'fake/m', deliver: false }, HOOK_TOKEN);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const { runId } = r.body as { runId: string };
    // 404 until the assistant has taken it.
    const statusAt = async (gw: SpawnedGateway) =>
      (await gw.admin(`/api/runs/${runId}`).catch(() => undefined))?.status;
    await eventually(async () => (await statusAt(first)) === 'retrying', LONG_MS).catch(async (err) => {
      const view = JSON.stringify(await first.admin(`/api/runs/${runId}`).catch((e: Error) => e.message));
      throw new Error(`${(err as Error).message}: ${view}, ${provider.requests.length} calls\n${first.output()}`);
    });
    assert.equal(provider.requests.length, 1);
    // Its retry waits in Redis, not in the process that dies now.
    await first.stop('SIGKILL');
    const second = await gateways.start('assistant', queue, { hooks, extra });
    const run = await eventually(async () => {
      const view = await second.admin(`/api/runs/${runId}`).catch(() => undefined);
      return view?.status === 'ok' && view;
    }, LONG_MS).catch((err) => {
      throw new Error(`${(err as Error).message}: ${provider.requests.length} calls\n${second.output()}`);
    });
    assert.equal(run.attempts?.length, 2, JSON.stringify(run));
    assert.equal(provider.requests.length, 2, 'the first try and its one retry');
    // Nothing left that could try it again: no retry waiting, no entry on the queue.
    const client = new Redis(server.url);
    try {
      const keys = await client.keys('*queue:retries*');
      for (const key of keys) {
        const type = await client.type(key);
        if (type === 'zset') assert.equal(await client.zcard(key), 0, key);
        if (type === 'stream') assert.equal(await client.xlen(key), 0, key);
      }
    } finally {
      client.disconnect();
    }
  } finally {
    await provider.close();
  }
});

test('a budget that holds: the run past it is held in Redis (newer ones behind it), released once and counted once as windows end', async () => {
  const queue = { redis: (await ownRedis()).url, name: 'held-budget' };
  // Windows long enough that the held run is still held when the next request comes, on a busy machine.
  const hooks = { endpoints: { agent: { budget: { runs: 1, perSeconds: 12, overflow: 'hold' } } } };
  const door = await gateways.start('ingress', queue, { hooks });
  const assistant = await gateways.start('assistant', queue, { hooks });
  const runIds: string[] = [];
  for (const message of ['within budget', 'past budget']) {
    const r = await door.hook('/hooks/agent', { message, deliver: false }, HOOK_TOKEN);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    runIds.push(r.body.runId);
  }
  const agentHook = async (gw: SpawnedGateway) =>
    ((await gw.admin('/api/hooks')).hooks as { name: string; held: number }[]).find((h) => h.name === 'agent')!;
  // The second waits in Redis for the window: every instance counts it.
  await eventually(async () => (await agentHook(door)).held === 1, LONG_MS);
  // A newer request of the hook is held behind it at the door (the door knows nothing of budgets).
  const behind = await door.hook('/hooks/agent', { message: 'behind it', deliver: false }, HOOK_TOKEN);
  assert.equal(behind.status, 202, JSON.stringify(behind.body));
  assert.equal(behind.body.held, true, JSON.stringify(behind.body));
  // Every instance reads the count again each second (pauses/queued-holds.ts): the assistant too, soon.
  await eventually(async () => (await agentHook(assistant)).held === 2, LONG_MS).catch(async (err) => {
    const counts = [await agentHook(door), await agentHook(assistant)].map((h) => h.held);
    throw new Error(`${(err as Error).message}: held at the door and the assistant ${counts}\n${assistant.output()}`);
  });
  const status = async (runId: string) => (await assistant.admin(`/api/runs/${runId}`).catch(() => undefined))?.status;
  const ended = async (): Promise<boolean> =>
    (await status(runIds[0]!)) === 'ok' && (await status(runIds[1]!)) === 'ok';
  // The one held behind ran too, in a later window: three run summaries in the main session.
  await eventually(async () => (await ended()) && (await texts(assistant, 'Hook ')).length === 3, LONG_MS).catch(
    async (err) => {
      throw new Error(
        `${(err as Error).message}: ${await status(runIds[0]!)}, ${await status(runIds[1]!)}\n${assistant.output()}`,
      );
    },
  );
  assert.equal((await agentHook(door)).held, 0);
});
