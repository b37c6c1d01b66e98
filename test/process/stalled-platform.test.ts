// A platform that answers its headers and then stalls mid-body, against the real gateway process: the
// try fails within the channel's timeoutSeconds and is retried (then sent), and a SIGTERM while a try
// is stalled finishes within gateway.shutdownGraceSeconds (the reply stays pending for the next start,
// never marked sent or failed on half an answer).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Arrival } from '../helpers/fake-channels/fake-platform.ts';
import { fakeTelegram } from '../helpers/fake-channels/telegram.ts';
import { SECRETS } from '../helpers/fake-channels/index.ts';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import { eventually, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

const telegram = await fakeTelegram(SECRETS.telegram);
after(() => telegram.close());

const textOf = (match: string) => (a: Arrival) => JSON.stringify(a.body ?? '').includes(match);
const stalled = { status: 200, body: { ok: true, result: { message_id: 99 } }, stall: true };

/**
 * SIGTERM, and the exit code; a gateway still running after `boundMs` is killed and the test fails.
 * The bound is for a busy machine, not a measure: the grace is 1 s.
 */
async function stopWithin(gw: SpawnedGateway, boundMs = 30_000): Promise<number | null> {
  const bound = new Promise<'bound'>((resolve) => setTimeout(resolve, boundMs, 'bound').unref());
  const code = await Promise.race([gw.stop(), bound]);
  if (code !== 'bound') return code;
  gw.child.kill('SIGKILL');
  throw new Error(`the gateway did not exit within ${boundMs} ms of SIGTERM:\n${gw.output()}`);
}

async function gatewayWith(timeoutSeconds: number) {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    gateway: { shutdownGraceSeconds: 1 },
    channels: {
      telegram: { botToken: SECRETS.telegram, defaultTo: '1001', apiRoot: telegram.url, timeoutSeconds },
    },
    hooks: { retry: { attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 0.2 } },
  });
  return { dir, gw: await spawnGateway(dir) };
}

test('an answer that stalls mid-body fails the try within timeoutSeconds; the retry sends it', async () => {
  const { gw } = await gatewayWith(1);
  try {
    telegram.aimed.push({ match: textOf('stalls once'), reply: stalled });
    const r = await gw.hook('/hooks/agent', { name: 'Stall', message: 'stalls once', channel: 'telegram', to: '42' });
    assert.equal(r.status, 202);
    const d = await eventually(async () => {
      const { deliveries } = await gw.admin('/api/outbox?limit=100');
      const found = deliveries.find((e: any) => e.runId === r.body.runId);
      return found && ['sent', 'failed'].includes(found.status) && found;
    }, 30_000);
    assert.equal(d.status, 'sent', JSON.stringify(d));
    assert.equal(d.attempts.length, 1);
    assert.equal(d.attempts[0].error, 'the answer stalled: not whole within 1 s');
    assert.equal(telegram.posts(textOf('stalls once')).length, 2);
  } finally {
    await stopWithin(gw);
  }
});

test('SIGTERM while a try is stalled mid-body: the gateway exits 0 within the grace, the reply kept pending', async () => {
  // A timeout far beyond the test: only the stop can end this try.
  const { dir, gw } = await gatewayWith(300);
  telegram.aimed.push({ match: textOf('stalls at the stop'), reply: stalled });
  const r = await gw.hook('/hooks/agent', { name: 'Stall', message: 'stalls at the stop', channel: 'telegram' });
  assert.equal(r.status, 202);
  await eventually(async () => telegram.posts(textOf('stalls at the stop')).length === 1);
  assert.equal(await stopWithin(gw), 0, gw.output());
  // The next start sends it: the try cut by the stop left it pending, not sent on half an answer.
  const next = await spawnGateway(dir);
  try {
    const d = await eventually(async () => {
      const { deliveries } = await next.admin('/api/outbox?limit=100');
      const found = deliveries.find((e: any) => e.text?.includes('stalls at the stop') && e.status === 'sent');
      return found;
    }, 30_000);
    assert.equal(d.status, 'sent');
    assert.equal(telegram.posts(textOf('stalls at the stop')).length, 2);
  } finally {
    await stopWithin(next);
  }
});

test('SIGTERM while a model provider stalls mid-answer (a run and a heartbeat): the gateway exits 0 within the grace', async () => {
  let begun = 0;
  const provider = await startFakeProvider((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
    res.write('{"choices":[{"message":{"content":"half', () => begun++);
  });
  try {
    const dir = await tempStateDir();
    await writeConfig(dir, {
      gateway: { shutdownGraceSeconds: 1 },
      models: { providers: { fake: { baseUrl: provider.baseUrl } } },
      agents: { defaults: { model: 'fake/m' }, list: [{ id: 'main', default: true }] },
    });
    const gw = await spawnGateway(dir);
    assert.equal((await gw.hook('/hooks/agent', { message: 'a run', deliver: false })).status, 202);
    assert.equal((await gw.hook('/hooks/wake', { text: 'a heartbeat', mode: 'now' })).status, 200);
    await eventually(async () => begun === 2);
    assert.equal(await stopWithin(gw), 0, gw.output());
  } finally {
    await provider.close();
  }
});
