// A pause shared by two real gateway processes on one real redis-server (hooks.sharedState): taken
// on one, in force on the other; each holds what it accepted and carries it out when resumed
// anywhere; a pause taken while Redis was down reaches the other once Redis is back.
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

let redis: RedisServer;
let a: SpawnedGateway;
let b: SpawnedGateway;

before(async () => {
  redis = await startRedis();
  const start = async (): Promise<SpawnedGateway> => {
    const dir = await tempStateDir();
    await writeConfig(dir, { hooks: { sharedState: { redis: redis.url, keyPrefix: 'pause:' } } });
    return spawnGateway(dir);
  };
  [a, b] = await Promise.all([start(), start()]);
  for (const gw of [a, b]) await eventually(async () => (await metric(gw, 'hookgate_shared_state_up')) === 1);
});
after(async () => {
  await Promise.all([a.stop(), b.stop()]);
  await redis.stop();
});

async function metric(gw: SpawnedGateway, name: string): Promise<number | undefined> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(await res.text());
  return m ? Number(m[1]) : undefined;
}

async function adminPost(gw: SpawnedGateway, p: string): Promise<any> {
  const res = await fetch(gw.url + p, { method: 'POST', headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  assert.equal(res.status, 200);
  return res.json();
}

async function state(gw: SpawnedGateway, name: string): Promise<{ paused: boolean; held: number }> {
  const { hooks } = await gw.admin('/api/hooks');
  return hooks.find((h: { name: string }) => h.name === name);
}

async function texts(gw: SpawnedGateway, prefix: string): Promise<string[]> {
  const { entries } = await gw.admin(`/api/sessions/${MAIN}/history?limit=1000`);
  return entries.filter((e: any) => e.kind === 'system-event' && e.text.startsWith(prefix)).map((e: any) => e.text);
}

const wake = (gw: SpawnedGateway, text: string) => gw.hook('/hooks/wake', { text, mode: 'next-heartbeat' }, HOOK_TOKEN);

test('a pause taken on one instance holds on the other; a resume on the other carries out what each held', async () => {
  await adminPost(a, '/api/hooks/wake/pause');
  await eventually(async () => (await state(b, 'wake')).paused);
  for (let i = 0; i < 3; i++) {
    assert.equal((await wake(a, `on a ${i}`)).status, 202);
    assert.equal((await wake(b, `on b ${i}`)).status, 202);
  }
  assert.equal((await state(a, 'wake')).held, 3);
  assert.equal((await state(b, 'wake')).held, 3);
  await adminPost(b, '/api/hooks/wake/resume');
  await eventually(async () => !(await state(a, 'wake')).paused && (await state(a, 'wake')).held === 0);
  await eventually(async () => (await state(b, 'wake')).held === 0);
  assert.deepEqual(await texts(a, 'on '), ['on a 0', 'on a 1', 'on a 2']);
  assert.deepEqual(await texts(b, 'on '), ['on b 0', 'on b 1', 'on b 2']);
});

test('a pause taken while Redis is down stays local, then reaches the other instance once Redis is back', async () => {
  await redis.kill();
  await eventually(async () => (await metric(a, 'hookgate_shared_state_up')) === 0);
  await adminPost(a, '/api/hooks/agent/pause');
  assert.equal((await state(b, 'agent')).paused, false);
  await redis.start();
  await eventually(async () => (await state(b, 'agent')).paused, 15_000);
  assert.equal((await state(a, 'agent')).paused, true);
  await adminPost(a, '/api/hooks/agent/resume');
  await eventually(async () => !(await state(b, 'agent')).paused);
});
