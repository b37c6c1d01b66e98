// Per-hook concurrency and a run queue fair between hooks, observed at a fake OpenAI-compatible
// provider (a real local server the standalone gateway calls): it holds every call until the test
// answers it and counts the calls in flight per hook.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { eventually, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.ts';

/** A provider whose calls wait for the test; each call's hook is read from its prompt ("hook=<id> <n>"). */
async function heldProvider(): Promise<{
  provider: FakeProvider;
  calls: { hook: string; n: number; res: ServerResponse }[];
  inFlight: Map<string, number>;
  most: Map<string, number>;
  answer(index: number): void;
}> {
  const calls: { hook: string; n: number; res: ServerResponse }[] = [];
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  const provider = await startFakeProvider((req, res) => {
    const prompt = JSON.stringify(req.body.messages ?? []);
    const [, hook = '?', n = '-1'] = /hook=(\w+) (\d+)/.exec(prompt) ?? [];
    calls.push({ hook, n: Number(n), res });
    inFlight.set(hook, (inFlight.get(hook) ?? 0) + 1);
    most.set(hook, Math.max(most.get(hook) ?? 0, inFlight.get(hook)!));
  });
  const answer = (index: number): void => {
    const { hook, res } = calls[index]!;
    inFlight.set(hook, inFlight.get(hook)! - 1);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ choices: [{ message: { content: `done ${hook}` } }] }));
  };
  return { provider, calls, inFlight, most, answer };
}

const mapping = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  match: { path: id },
  action: 'agent',
  messageTemplate: `hook=${id} {{n}}`,
  model: 'fake/m1',
  ...extra,
});

test('each hook runs at most its maxConcurrentRuns at once, within hooks.maxConcurrentRuns', async () => {
  const held = await heldProvider();
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks: {
      maxConcurrentRuns: 4,
      endpoints: { agent: { maxConcurrentRuns: 2 } },
      mappings: [mapping('alerts', { maxConcurrentRuns: 1 })],
    },
    models: { providers: { fake: { baseUrl: held.provider.baseUrl } } },
    agents: { defaults: { models: ['fake/m1'] }, list: [{ id: 'main', default: true }] },
  });
  const gw = await spawnGateway(dir);
  try {
    const alerts: string[] = [];
    const agent: string[] = [];
    for (let n = 0; n < 3; n++) {
      const r = await gw.hook('/hooks/alerts', { n });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      alerts.push(r.body.runId);
    }
    for (let n = 0; n < 3; n++) {
      const r = await gw.hook('/hooks/agent', { message: `hook=agent ${n}`, model: 'fake/m1' });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      agent.push(r.body.runId);
    }
    // Every run was queued before its 202, and a free slot is taken at once: the statuses are final here.
    const statuses = async (ids: string[]) =>
      (await Promise.all(ids.map((id) => gw.admin(`/api/runs/${id}`)))).map((r: any) => r.status);
    assert.deepEqual(await statuses(alerts), ['running', 'queued', 'queued'], 'alerts: one at a time');
    assert.deepEqual(await statuses(agent), ['running', 'running', 'queued'], 'agent: two at a time');
    await eventually(async () => held.calls.length === 3, 60_000);
    // Answer the calls as they come until all six ran; the provider never saw more than each limit.
    for (let answered = 0; answered < 6; answered++) {
      await eventually(async () => held.calls.length > answered, 60_000);
      held.answer(answered);
    }
    const final = await eventually(async () => {
      const all = await statuses([...alerts, ...agent]);
      return all.every((s) => s === 'ok') && all;
    }, 60_000);
    assert.equal(final.length, 6);
    assert.equal(held.most.get('alerts'), 1);
    assert.equal(held.most.get('agent'), 2);
  } finally {
    await gw.stop();
    await held.provider.close();
  }
});

test("a flood on one hook delays another hook's next run by at most one run slot", async () => {
  const held = await heldProvider();
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks: { maxConcurrentRuns: 1, mappings: [mapping('flood'), mapping('quiet')] },
    models: { providers: { fake: { baseUrl: held.provider.baseUrl } } },
    agents: { defaults: { models: ['fake/m1'] }, list: [{ id: 'main', default: true }] },
  });
  const gw = await spawnGateway(dir);
  try {
    const ids: string[] = [];
    for (let n = 0; n < 8; n++) ids.push((await gw.hook('/hooks/flood', { n })).body.runId);
    await eventually(async () => held.calls.length === 1, 60_000);
    const quiet = await gw.hook('/hooks/quiet', { n: 0 });
    assert.equal(quiet.status, 202);
    // The one slot frees: the quiet hook's run takes it, ahead of the seven flood runs queued before it.
    held.answer(0);
    await eventually(async () => held.calls.length === 2, 60_000);
    assert.deepEqual(
      held.calls.map((c) => c.hook),
      ['flood', 'quiet'],
    );
    for (let answered = 1; answered < 9; answered++) {
      await eventually(async () => held.calls.length > answered, 60_000);
      held.answer(answered);
    }
    await eventually(async () => {
      const all = await Promise.all([...ids, quiet.body.runId].map((id) => gw.admin(`/api/runs/${id}`)));
      return all.every((r: any) => r.status === 'ok');
    }, 60_000);
    // The flood's own runs kept their order.
    assert.deepEqual(
      held.calls.filter((c) => c.hook === 'flood').map((c) => c.n),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
  } finally {
    await gw.stop();
    await held.provider.close();
  }
});
