// Budgets on the real gateway process with a fake OpenAI-compatible provider that reports `usage` and
// counts its calls: runs past a budget never reach it, the tokens it reported spend a tokens budget,
// and kill -9 with a digest waiting, then a restart, posts that digest once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  eventually,
  SOURCE_CLI,
  spawnCapturing,
  GATEWAY_TOKEN,
  MAIN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

const mapping = (id: string, budget: object) => ({
  id,
  match: { path: id },
  action: 'agent',
  deliver: false,
  wakeMode: 'next-heartbeat',
  model: 'fake/m',
  messageTemplate: '{{t}}',
  budget,
});

async function config(dir: string, baseUrl: string, hooks: object): Promise<void> {
  await writeConfig(dir, {
    hooks,
    models: { providers: { fake: { baseUrl } } },
    agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
  });
}

async function digestEvents(gw: SpawnedGateway): Promise<string[]> {
  const { entries } = await gw.admin(`/api/sessions/${MAIN}/history?limit=1000`);
  // System events only: the heartbeat the digest asks for reads it into a prompt of its own.
  return entries
    .filter((e: { kind: string; text: string }) => e.kind === 'system-event' && e.text.includes('over its budget'))
    .map((e: { text: string }) => e.text);
}

async function metric(gw: SpawnedGateway, line: RegExp): Promise<number | undefined> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const m = new RegExp(`^${line.source} (\\S+)$`, 'm').exec(await res.text());
  return m ? Number(m[1]) : undefined;
}

test('runs past a budget never reach the provider; the usage it reports spends a tokens budget', async () => {
  const provider = await startFakeProvider();
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl, {
    mappings: [
      mapping('alerts', { runs: 2, perSeconds: 600 }),
      mapping('costly', { tokens: 1, perSeconds: 600, overflow: 'refuse' }),
    ],
  });
  const gw = await spawnGateway(dir);
  try {
    const answers = [];
    for (const i of [0, 1, 2, 3, 4]) answers.push(await gw.hook('/hooks/alerts', { t: `alert ${i}` }));
    assert.deepEqual(
      answers.map((a) => (a.body.digested ? 'digested' : typeof a.body.runId)),
      ['string', 'string', 'digested', 'digested', 'digested'],
    );
    await eventually(async () => provider.requests.length === 2);
    assert.equal(await metric(gw, /hookgate_digested_total\{hook="alerts"\}/), 3);
    assert.equal(await metric(gw, /hookgate_budget_runs\{budget="hook:alerts"\}/), 2);
    const logged = await gw.admin('/api/requests?limit=10');
    assert.equal(logged.requests.filter((r: { digested?: boolean }) => r.digested === true).length, 3);
    // The dry run reads the budget's window from the state dir, and says so.
    const payload = path.join(dir, 'alert.json');
    await writeFile(payload, JSON.stringify({ t: 'tried' }));
    const cli = spawnCapturing(process.execPath, [
      ...SOURCE_CLI,
      'webhooks',
      'test',
      'alerts',
      '--payload',
      payload,
      '--state-dir',
      dir,
    ]);
    assert.equal(await cli.exited, 0, cli.output());
    assert.match(cli.output(), /^spend +would be digested: alerts's budget of 2 runs per 600 s is spent until /m);
    assert.match(cli.output(), /^answer +202 \{"ok":true,"digested":true,"requestId":"<its request id>"\}$/m);

    const first = await gw.hook('/hooks/costly', { t: 'spends tokens' });
    assert.equal(first.status, 202, JSON.stringify(first.body));
    await eventually(async () => {
      const { hooks } = await gw.admin('/api/hooks');
      const costly = hooks.find((h: { name: string }) => h.name === 'costly');
      return costly.budgets[0].tokens > 1;
    });
    const refused = await gw.hook('/hooks/costly', { t: 'refused' });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, 'budget_exhausted');
    assert.equal(provider.requests.length, 3, 'nothing past a budget reached the provider');
  } finally {
    await gw.stop();
    await provider.close();
  }
});

test('kill -9 with a digest waiting: the restart posts it once, and the budget is still spent', async () => {
  const provider = await startFakeProvider();
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl, {
    mappings: [
      mapping('noisy', { runs: 1, perSeconds: 3 }),
      mapping('strict', { runs: 1, perSeconds: 600, overflow: 'refuse' }),
    ],
  });
  const first = await spawnGateway(dir);
  let second: SpawnedGateway | undefined;
  let third: SpawnedGateway | undefined;
  try {
    assert.equal(typeof (await first.hook('/hooks/noisy', { t: 'runs' })).body.runId, 'string');
    assert.equal((await first.hook('/hooks/noisy', { t: 'kept through kill -9' })).body.digested, true);
    assert.equal((await first.hook('/hooks/strict', { t: 'spends it' })).status, 202);
    await first.stop('SIGKILL');
    second = await spawnGateway(dir);
    assert.equal((await second.hook('/hooks/strict', { t: 'after the restart' })).status, 429);
    const told = await eventually(async () => {
      const events = await digestEvents(second!);
      return events.length > 0 && events;
    }, 30_000);
    assert.equal(told.length, 1);
    assert.match(told[0]!, /^Hook noisy: 1 events over its budget \(1 runs per 3 s\):\n<<<EXTERNAL_UNTRUSTED_CONTENT/);
    assert.ok(told[0]!.includes('kept through kill -9'));
    await eventually(async () => (await metric(second!, /hookgate_budget_digests_waiting/)) === 0);
    await second.stop();
    second = undefined;
    third = await spawnGateway(dir);
    assert.equal(await metric(third, /hookgate_budget_digests_waiting/), 0);
    assert.equal((await digestEvents(third)).length, 1, 'posted once');
  } finally {
    await second?.stop();
    await third?.stop();
    await provider.close();
  }
});
