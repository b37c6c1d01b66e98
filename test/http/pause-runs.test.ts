// Held agent runs on resume, over loopback HTTP: fed to the run service as slots free up (never more
// than maxConcurrentRuns at once, never refused by maxQueuedRuns), started in arrival order, under
// today's policies; a paused mapping's transform runs at the request and only its result is held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { post, withGateway, coreAdmin } from '../helpers/recording-host.ts';
import { assertError, waitUntil } from '../helpers/common.ts';

test('held runs start in arrival order within maxConcurrentRuns, past maxQueuedRuns', async () => {
  let running = 0;
  let most = 0;
  const releases: (() => void)[] = [];
  await withGateway(
    {
      hooks: { maxConcurrentRuns: 2, maxQueuedRuns: 1 },
      turn: async () => {
        running++;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        return { status: 'ok', reply: 'done' };
      },
    },
    async (gw) => {
      await coreAdmin(gw, 'POST', 'hooks/agent/pause');
      const n = 12;
      const answers = await Promise.all(
        Array.from({ length: n }, (_, i) => post(gw.url, '/hooks/agent', { message: `job ${i}`, deliver: false })),
      );
      const order = new Map<string, number>();
      answers.forEach((a, i) => {
        assert.equal(a.status, 202, JSON.stringify(a.body));
        assert.equal(a.body.held, true);
        order.set(a.body.requestId, i);
      });
      assert.equal(gw.rec.turns.length, 0, 'nothing runs while paused');
      const arrival = (await gw.plugin.requests.page({ outcome: 'held' }, 1000)).requests.map((r) =>
        order.get(r.requestId),
      );
      await coreAdmin(gw, 'POST', 'hooks/agent/resume');
      // Let each run end only once the next ones had their chance to start beyond the limit.
      while (gw.rec.turns.length < n || releases.length) {
        await waitUntil(() => releases.length > 0, 'a run started');
        releases.shift()!();
      }
      await gw.finalRuns(n);
      assert.equal(most, 2, 'never more than maxConcurrentRuns at once');
      const started = gw.rec.turns.map((t) => Number(/job (\d+)/.exec(t.prompt)![1]));
      assert.deepEqual(started, arrival);
      assert.deepEqual(await coreAdmin(gw, 'GET', 'hooks'), {
        hooks: [
          { name: 'wake', paused: false, held: 0 },
          { name: 'agent', paused: false, held: 0 },
        ],
      });
    },
  );
});

test('a paused mapping: its transform runs at the request (a failing one is 500), the result is what is held', async () => {
  const transform = 'export default (ctx) => ctx.payload.fail ? { nope: 1 } : ({ text: "built " + ctx.payload.n });';
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'built',
            match: { path: 'built' },
            action: 'wake',
            allowUnsafeExternalContent: true,
            transform: { module: 'built.ts' },
          },
        ],
      },
      files: { 'hooks/transforms/built.ts': transform },
    },
    async (gw) => {
      await coreAdmin(gw, 'POST', 'hooks/built/pause');
      assertError(await post(gw.url, '/hooks/built', { fail: true }), 500, 'mapping_failed');
      const held = await post(gw.url, '/hooks/built', { n: 7 });
      assert.equal(held.status, 202);
      assert.deepEqual(await coreAdmin(gw, 'GET', 'hooks'), {
        hooks: [
          { name: 'wake', paused: false, held: 0 },
          { name: 'agent', paused: false, held: 0 },
          { name: 'built', paused: true, held: 1 },
        ],
      });
      await coreAdmin(gw, 'POST', 'hooks/built/resume');
      await waitUntil(() => gw.rec.events.length === 1, 'the held event');
      assert.equal(gw.rec.events[0]!.text, 'built 7');
      assert.equal(gw.rec.events[0]!.meta.hook, 'built');
    },
  );
});

test('a held run refused by the policies in force at resume is dropped and logged, the rest go on', async () => {
  await withGateway({ hooks: { allowedAgentIds: ['main', 'ops'] }, models: ['m1'] }, async (gw) => {
    await coreAdmin(gw, 'POST', 'hooks/agent/pause');
    assertError(await post(gw.url, '/hooks/agent', { message: 'x', model: 'other' }), 400, 'model_not_allowed');
    assert.equal(
      (await post(gw.url, '/hooks/agent', { message: 'to ops', agentId: 'ops', deliver: false })).status,
      202,
    );
    assert.equal((await post(gw.url, '/hooks/agent', { message: 'to main', deliver: false })).status, 202);
    const config = JSON.parse(await readFile(gw.configPath, 'utf8'));
    config.hooks.allowedAgentIds = ['main'];
    await writeFile(gw.configPath, JSON.stringify(config));
    assert.equal((await gw.plugin.reload()).ok, true);
    await coreAdmin(gw, 'POST', 'hooks/agent/resume');
    const [final] = await gw.finalRuns(1);
    assert.equal(final!.agentId, 'main');
    await waitUntil(
      () =>
        gw.rec.logs.some(
          (l) => l.level === 'warn' && /refused at resume/.test(l.msg) && l.fields?.code === 'agent_not_allowed',
        ),
      'the refusal logged',
    );
    assert.equal(gw.rec.turns.length, 1);
  });
});

test('a request that waits for its run while the hook is paused is answered held at once, its run later', async () => {
  await withGateway({ hooks: { maxWaitSeconds: 30 } }, async (gw) => {
    await coreAdmin(gw, 'POST', 'hooks/agent/pause');
    const held = await post(gw.url, '/hooks/agent', { message: 'wait for me', waitForCompletion: true });
    assert.equal(held.status, 202, JSON.stringify(held.body));
    assert.deepEqual(held.body, { ok: true, held: true, requestId: held.body.requestId });
    assert.equal(gw.rec.turns.length, 0);
    await coreAdmin(gw, 'POST', 'hooks/agent/resume');
    await gw.finalRuns(1);
    assert.deepEqual(
      gw.rec.turns.map((t) => t.prompt.includes('wait for me')),
      [true],
    );
  });
});
