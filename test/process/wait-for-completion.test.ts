// waitForCompletion through the real gateway process and a fake model provider on loopback: the
// answer tells the run's status, reply kind and delivery, never the reply's text; a run outlasting
// hooks.maxWaitSeconds answers 202 running and its duplicate later gets the final outcome; a client
// that leaves while waiting leaves nothing behind; the request log shows what waited.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import type { ServerResponse } from 'node:http';
import { startFakeProvider, type FakeProvider, type ProviderRequest } from '../helpers/fake-provider.ts';
import {
  eventually,
  spawnGateway,
  tempStateDir,
  writeConfig,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  MAIN,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

const CANARY = 'CANARY-wait-3f9d1c';

let provider: FakeProvider;
/** Answers of the held case, sent when the test says. */
const held: (() => void)[] = [];
let patient: SpawnedGateway;
let hasty: SpawnedGateway;

function complete(res: ServerResponse, content: string): void {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
}

function answer(req: ProviderRequest, res: ServerResponse): void {
  const prompt = JSON.stringify(req.body.messages);
  if (prompt.includes('case:visible')) return complete(res, `Deployed build 42. ${CANARY}`);
  if (prompt.includes('case:heartbeat')) return complete(res, 'HEARTBEAT_OK');
  if (prompt.includes('case:hang')) return; // never answers: the run times out
  if (prompt.includes('case:held')) {
    const tag = /tag:(\w+)/.exec(prompt)?.[1] ?? '';
    held.push(() => complete(res, `late reply ${tag} ${CANARY}`));
    return;
  }
  res.statusCode = 400;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ error: { message: 'the model refused the request' } }));
}

async function gatewayWith(maxWaitSeconds: number): Promise<SpawnedGateway> {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks: {
      maxWaitSeconds,
      mappings: [
        {
          id: 'build',
          match: { path: 'build' },
          action: 'agent',
          messageTemplate: 'case:visible {{id}}',
          model: 'fake/m1',
          deliver: false,
          waitForCompletion: true,
        },
      ],
    },
    models: { providers: { fake: { baseUrl: provider.baseUrl } } },
  });
  return spawnGateway(dir);
}

before(async () => {
  provider = await startFakeProvider(answer);
  [patient, hasty] = await Promise.all([gatewayWith(60), gatewayWith(1)]);
});
after(async () => {
  for (const release of held.splice(0)) release();
  await Promise.all([patient?.stop(), hasty?.stop()]);
  await provider?.close();
});

interface Answer {
  status: number;
  text: string;
  body: any;
}

async function hook(gw: SpawnedGateway, p: string, body: unknown, key?: string): Promise<Answer> {
  const res = await fetch(gw.url + p, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(!text.includes(CANARY), `the reply's text never reaches the answer: ${text}`);
  return { status: res.status, text, body: JSON.parse(text) };
}

const agent = (message: string, more: Record<string, unknown> = {}) => ({
  message,
  model: 'fake/m1',
  waitForCompletion: true,
  ...more,
});

async function waitingGauge(gw: SpawnedGateway): Promise<number> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const m = /^hookgate_requests_waiting (\d+)/m.exec(await res.text());
  return Number(m?.[1]);
}

test('a visible reply: 200 with status ok and reply visible, never the text', async () => {
  const r = await hook(patient, '/hooks/agent', agent('case:visible', { deliver: false }));
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body).sort(), ['ok', 'reply', 'runId', 'status']);
  assert.equal(r.body.ok, true);
  assert.equal(r.body.status, 'ok');
  assert.equal(r.body.reply, 'visible');
  // The run's record says so too (written just after the outcome is told).
  await eventually(async () => (await patient.admin(`/api/runs/${r.body.runId}`)).status === 'ok');
});

test('a heartbeat acknowledgement is silent, and its delivery skipped', async () => {
  const r = await hook(patient, '/hooks/agent', agent('case:heartbeat', { channel: 'telegram', to: '777' }));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'ok');
  assert.equal(r.body.reply, 'silent');
  assert.deepEqual(r.body.delivery, { channel: 'telegram', to: '777', status: 'skipped' });
});

test('a refused run: status error, reply none', async () => {
  const r = await hook(patient, '/hooks/agent', agent('case:refused', { deliver: false }));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'error');
  assert.equal(r.body.reply, 'none');
  assert.ok(!r.text.includes('refused the request'), 'the error text is not in the answer');
});

test('a run past its own timeout: status timeout, reply none', async () => {
  const r = await hook(patient, '/hooks/agent', agent('case:hang', { deliver: false, timeoutSeconds: 1 }));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'timeout');
  assert.equal(r.body.reply, 'none');
});

test('a mapping with waitForCompletion waits for its run', async () => {
  const r = await hook(patient, '/hooks/build', { id: 7 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, 'ok');
  assert.equal(r.body.reply, 'visible');
});

test('without waitForCompletion the answer is the 202 at acceptance, as before', async () => {
  const r = await hook(patient, '/hooks/agent', { message: 'case:visible', model: 'fake/m1', deliver: false });
  assert.equal(r.status, 202);
  assert.deepEqual(Object.keys(r.body).sort(), ['ok', 'runId']);
});

test('a run outlasting maxWaitSeconds: 202 running, then its duplicate gets the final outcome', async () => {
  const key = 'wait-slow-1';
  const first = await hook(hasty, '/hooks/agent', agent('case:held tag:slow', { deliver: false }), key);
  assert.equal(first.status, 202, first.text);
  assert.deepEqual(first.body, { ok: true, runId: first.body.runId, status: 'running' });
  // Still running: the duplicate waits its own second and answers the same.
  const again = await hook(hasty, '/hooks/agent', agent('case:held tag:slow', { deliver: false }), key);
  assert.equal(again.status, 202);
  assert.equal(again.body.status, 'running');
  assert.equal(again.body.duplicate, true);
  await eventually(async () => held.length === 1);
  held.shift()!();
  const final = await eventually(async () => {
    const r = await hook(hasty, '/hooks/agent', agent('case:held tag:slow', { deliver: false }), key);
    return r.status === 200 && r;
  });
  assert.equal(provider.requests.filter((r) => JSON.stringify(r.body).includes('tag:slow')).length, 1, 'one run');
  assert.deepEqual(final.body, {
    ok: true,
    runId: first.body.runId,
    status: 'ok',
    reply: 'visible',
    duplicate: true,
  });
  const { requests } = await hasty.admin('/api/requests?limit=10');
  const waited = requests.filter((e: any) => e.idempotencyKey === key && e.waited !== undefined);
  assert.ok(waited.length >= 2, JSON.stringify(requests));
  assert.equal(waited[0].runStatus, 'running');
  assert.equal(waited[0].status, 202);
  assert.ok(waited[0].waited >= 900, `waited ${waited[0].waited} ms`);
});

test('a duplicate arriving while the first still waits waits too, and both get the outcome', async () => {
  const key = 'wait-both-1';
  const body = agent('case:held tag:both', { deliver: false });
  const first = hook(patient, '/hooks/agent', body, key);
  await eventually(async () => held.length === 1);
  const second = hook(patient, '/hooks/agent', body, key);
  await eventually(async () => (await waitingGauge(patient)) === 2);
  held.shift()!();
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a.status, 200, a.text);
  assert.equal(b.status, 200, b.text);
  assert.equal(a.body.status, 'ok');
  assert.equal(b.body.runId, a.body.runId);
  assert.equal(b.body.duplicate, true);
  assert.equal(provider.requests.filter((r) => JSON.stringify(r.body).includes('tag:both')).length, 1, 'one run');
});

test('a client that leaves while waiting: the wait ends, nothing is left waiting, the run still ends', async () => {
  const gone = request(`${patient.url}/hooks/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
  });
  gone.on('error', () => {});
  gone.end(JSON.stringify(agent('case:held tag:leaver', { deliver: false })));
  await eventually(async () => held.length === 1 && (await waitingGauge(patient)) === 1);
  gone.destroy();
  await eventually(async () => (await waitingGauge(patient)) === 0);
  const { requests } = await patient.admin('/api/requests?limit=5');
  const left = requests.at(-1);
  assert.equal(left.runStatus, 'running');
  held.shift()!();
  // The run ended all the same: its summary is in the main session.
  await eventually(async () => {
    const { entries } = await patient.admin(`/api/sessions/${MAIN}/history?limit=1000`);
    return entries.some((e: any) => JSON.stringify(e).includes('late reply leaver'));
  });
});
