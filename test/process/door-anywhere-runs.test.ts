// Runs through the queue (hooks.queue) past an assistant's run limits: it takes a queued run only
// once the run can start there, so what it cannot start yet waits in the queue (for any taker) and
// is never refused and dropped after the door acknowledged it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  eventually,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';

/** Generous: the machine is shared, and gateways start through tsx. */
const LONG_MS = 120_000;

let redis: RedisServer;
let provider: FakeProvider;
/** The model's answers, held until the test lets them go. */
const heldAnswers: ServerResponse[] = [];
let answering = false;
const running: SpawnedGateway[] = [];

const answer = (res: ServerResponse): void => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'done' } }] }));
};

before(async () => {
  redis = await startRedis();
  provider = await startFakeProvider((_req, res) => (answering ? answer(res) : heldAnswers.push(res)));
});
after(async () => {
  await Promise.all(running.map((gw) => gw.stop().catch(() => {})));
  await provider.close();
  await redis.stop();
});

async function gateway(role: 'ingress' | 'assistant', hooks: Record<string, unknown>): Promise<SpawnedGateway> {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks,
    models: { providers: { fake: { baseUrl: provider.baseUrl } } },
    agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
  });
  const gw = await spawnGateway(dir, ['--role', role]);
  running.push(gw);
  return gw;
}

async function runStatus(gw: SpawnedGateway, runId: string): Promise<string | undefined> {
  const res = await fetch(`${gw.url}/api/runs/${runId}`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return res.status === 200 ? ((await res.json()) as { status: string }).status : undefined;
}

test("runs past the assistant's maxConcurrentRuns and maxQueuedRuns wait in the queue, and each is carried out once", async () => {
  const queue = { redis: redis.url, name: 'run-limits' };
  const door = await gateway('ingress', { queue });
  const assistant = await gateway('assistant', { queue, maxConcurrentRuns: 1, maxQueuedRuns: 1 });
  const runIds: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await door.hook('/hooks/agent', { message: `run ${i}`, model: 'fake/m', deliver: false }, HOOK_TOKEN);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    runIds.push((r.body as { runId: string }).runId);
  }
  // The first run holds the one slot; the next ones are not taken while it runs.
  await eventually(async () => heldAnswers.length === 1, LONG_MS);
  assert.equal(await runStatus(assistant, runIds[0]!), 'running');
  for (const runId of runIds.slice(1))
    assert.equal(await runStatus(assistant, runId), undefined, `${runId} still queued`);
  answering = true;
  for (const res of heldAnswers.splice(0)) answer(res);
  await eventually(async () => {
    const statuses = await Promise.all(runIds.map((id) => runStatus(assistant, id)));
    return statuses.every((s) => s === 'ok');
  }, LONG_MS).catch((err) => {
    throw new Error(`${(err as Error).message}\n${assistant.output()}`);
  });
  assert.equal(provider.requests.length, runIds.length, 'one model call per run');
});
