// Runs through the queue (hooks.queue) past an assistant's run limits: it takes a queued run only
// once the run can start there, so what it cannot start yet stays in the queue under its lease (for
// any taker once the lease lapses) and is never refused and dropped after the door acknowledged it;
// an assistant stopped meanwhile leaves it there too, and stops within its grace.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { GATEWAY_TOKEN, HOOK_TOKEN, eventually, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { QueueGateways, type QueueConfig } from '../helpers/queue-gateways.ts';

/** Generous: the machine is shared, and gateways start through tsx. */
const LONG_MS = 120_000;

let redis: RedisServer;
let provider: FakeProvider;
/** The model's answers, held until the test lets them go. */
const heldAnswers: ServerResponse[] = [];
let answering = false;
const gateways = new QueueGateways();

const answer = (res: ServerResponse): void => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'done' } }] }));
};

before(async () => {
  redis = await startRedis();
  provider = await startFakeProvider((_req, res) => (answering ? answer(res) : heldAnswers.push(res)));
});
after(async () => {
  await gateways.stopAll();
  await provider.close();
  await redis.stop();
});

const extra = () => ({
  models: { providers: { fake: { baseUrl: provider.baseUrl } } },
  agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
});

async function runStatus(gw: SpawnedGateway, runId: string): Promise<string | undefined> {
  const res = await fetch(`${gw.url}/api/runs/${runId}`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return res.status === 200 ? ((await res.json()) as { status: string }).status : undefined;
}

/** `count` agent requests at the door, each answered 202; their run ids in order. */
async function queueRuns(door: SpawnedGateway, count: number, label: string): Promise<string[]> {
  const runIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = await door.hook(
      '/hooks/agent',
      { message: `${label} ${i}`, model: 'fake/m', deliver: false },
      HOOK_TOKEN,
    );
    assert.equal(r.status, 202, JSON.stringify(r.body));
    runIds.push((r.body as { runId: string }).runId);
  }
  return runIds;
}

/** Lets the held model answer go, starts another assistant, and waits until it ran `runIds`, ok. */
async function anotherRunsThem(queue: QueueConfig, runIds: string[]): Promise<void> {
  answering = true;
  for (const res of heldAnswers.splice(0)) res.destroy();
  const other = await gateways.start('assistant', queue, { extra: extra() });
  await eventually(async () => {
    const statuses = await Promise.all(runIds.map((id) => runStatus(other, id)));
    return statuses.every((s) => s === 'ok');
  }, LONG_MS).catch((err) => {
    throw new Error(`${(err as Error).message}\n${other.output()}`);
  });
}

test("runs past an assistant's maxConcurrentRuns and maxQueuedRuns wait in the queue: killed, another carries each out once", async () => {
  const queue = { redis: redis.url, name: 'run-limits', leaseSeconds: 2 };
  const door = await gateways.start('ingress', queue, { extra: extra() });
  const limited = await gateways.start('assistant', queue, {
    hooks: { maxConcurrentRuns: 1, maxQueuedRuns: 1 },
    extra: extra(),
  });
  const runIds = await queueRuns(door, 6, 'run');
  // The first run holds the one slot; the others are not started, nor kept on this assistant's disk.
  await eventually(async () => heldAnswers.length === 1, LONG_MS);
  assert.equal(await runStatus(door, runIds[0]!), 'running');
  await limited.stop('SIGKILL');
  const rest = runIds.slice(1);
  await anotherRunsThem(queue, rest);
  assert.equal(provider.requests.length, 1 + rest.length, 'the killed run once, then one model call per run');
});

test('an assistant stopped while queued runs wait for its one slot stops within its grace, and leaves them queued', async () => {
  const queue = { redis: redis.url, name: 'run-limits-stop', leaseSeconds: 2 };
  const door = await gateways.start('ingress', queue, { extra: extra() });
  const limited = await gateways.start('assistant', queue, {
    hooks: { maxConcurrentRuns: 1 },
    extra: { ...extra(), gateway: { shutdownGraceSeconds: 2 } },
  });
  answering = false;
  const calls = provider.requests.length;
  const runIds = await queueRuns(door, 4, 'stop');
  await eventually(async () => heldAnswers.length === 1, LONG_MS);
  // SIGTERM: the helper fails the test if the gateway is not gone within its exit bound.
  await limited.stop('SIGTERM');
  const rest = runIds.slice(1);
  await anotherRunsThem(queue, rest);
  assert.equal(provider.requests.length - calls, 1 + rest.length, 'the stopped run once, then one call per run');
});
