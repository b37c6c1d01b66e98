// Bursts in one run on the real gateway process with a fake OpenAI-compatible provider: requests of
// one batch reach the provider as one call with every message in order, and kill -9 with a batch
// waiting, then a restart, runs that batch once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import {
  eventually,
  GATEWAY_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

async function config(dir: string, baseUrl: string, coalesce: object): Promise<void> {
  await writeConfig(dir, {
    hooks: {
      mappings: [
        {
          id: 'ci',
          match: { path: 'ci' },
          action: 'agent',
          deliver: false,
          wakeMode: 'next-heartbeat',
          model: 'fake/m',
          messageTemplate: 'job {{job}} failed',
          coalesce,
        },
      ],
    },
    models: { providers: { fake: { baseUrl } } },
    agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
  });
}

async function gauge(gw: SpawnedGateway, name: string): Promise<number | undefined> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(await res.text());
  return m ? Number(m[1]) : undefined;
}

// A batch's run is unknown (404) until its window closes and it starts.
const finished = (gw: SpawnedGateway, runId: string) =>
  eventually(async () => {
    const run = await gw.admin(`/api/runs/${runId}`).catch(() => undefined);
    return run !== undefined && ['ok', 'error', 'timeout'].includes(run.status) && run;
  }, 30_000);

test('a full batch is one model call with every message in arrival order', async () => {
  const provider = await startFakeProvider();
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl, { seconds: 600, maxItems: 4 });
  const gw = await spawnGateway(dir);
  try {
    const answers = [];
    for (const job of [1, 2, 3, 4]) answers.push(await gw.hook('/hooks/ci', { job }));
    const { runId } = answers[0]!.body;
    for (const a of answers) assert.deepEqual(a.body, { ok: true, runId, coalesced: true });
    assert.equal((await finished(gw, runId)).status, 'ok');
    assert.equal(provider.requests.length, 1);
    const prompt: string = provider.requests[0]!.body.messages[0].content;
    const at = [1, 2, 3, 4].map((j) => prompt.indexOf(`job ${j} failed`));
    assert.ok(
      at.every((i, n) => i > 0 && (n === 0 || i > at[n - 1]!)),
      prompt,
    );
  } finally {
    await gw.stop();
    await provider.close();
  }
});

test('kill -9 with a batch waiting: the restart runs it once', async () => {
  const provider = await startFakeProvider();
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl, { seconds: 3, maxItems: 100 });
  const first = await spawnGateway(dir);
  let second: SpawnedGateway | undefined;
  let third: SpawnedGateway | undefined;
  try {
    const a = await first.hook('/hooks/ci', { job: 'one' });
    const b = await first.hook('/hooks/ci', { job: 'two' });
    assert.equal(a.body.runId, b.body.runId);
    await first.stop('SIGKILL');
    assert.equal(provider.requests.length, 0, 'the window had not closed');
    second = await spawnGateway(dir);
    assert.equal((await finished(second, a.body.runId)).status, 'ok');
    assert.equal(provider.requests.length, 1);
    assert.match(provider.requests[0]!.body.messages[0].content, /job one failed[^]*job two failed/);
    assert.equal(await gauge(second, 'hookgate_batched_requests_waiting'), 0);
    await second.stop();
    second = undefined;
    third = await spawnGateway(dir);
    assert.equal(await gauge(third, 'hookgate_batched_requests_waiting'), 0);
    assert.equal(provider.requests.length, 1, 'run once');
  } finally {
    await second?.stop();
    await third?.stop();
    await provider.close();
  }
});
