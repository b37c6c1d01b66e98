// Bursts in one run over loopback HTTP: requests with the same coalesce key become one run whose
// message lists their messages in arrival order, each wrapped on its own; each request is answered
// at once with that run's id; the run starts when the batch is full or its window closes; a batch
// counts as one run in budgets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, withGateway, coreAdmin } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';

const START = /<<<EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]{24}">>>/g;

const ci = (coalesce: object, extra: object = {}) => ({
  id: 'ci',
  match: { path: 'ci' },
  action: 'agent',
  deliver: false,
  messageTemplate: 'job {{job}} failed',
  coalesce,
  ...extra,
});

test('a full batch: one run at once, every message in arrival order, each answered with its run id', async () => {
  await withGateway({ hooks: { mappings: [ci({ seconds: 600, maxItems: 3 })] } }, async (gw) => {
    const answers = [];
    for (const job of ['a', 'b', 'c']) answers.push(await post(gw.url, '/hooks/ci', { job }));
    const runId = answers[0]!.body.runId;
    assert.equal(typeof runId, 'string');
    for (const a of answers) {
      assert.equal(a.status, 202);
      assert.deepEqual(a.body, { ok: true, runId, coalesced: true });
    }
    const [final] = await gw.finalRuns(1);
    assert.equal(final!.runId, runId);
    assert.equal(gw.rec.turns.length, 1);
    const { prompt } = gw.rec.turns[0]!;
    assert.equal(prompt.match(START)?.length, 3, 'each message wrapped on its own');
    const at = ['job a failed', 'job b failed', 'job c failed'].map((m) => prompt.indexOf(m));
    assert.ok(
      at.every((i, n) => i > 0 && (n === 0 || i > at[n - 1]!)),
      'in arrival order',
    );
    assert.equal(gw.rec.logs.filter((l) => l.level === 'error').length, 0);
    // The next request opens a new batch.
    const next = await post(gw.url, '/hooks/ci', { job: 'd' });
    assert.notEqual(next.body.runId, runId);
    await waitUntil(() => gw.plugin.requests.size === 4, 'the four requests in the request log');
    const { requests } = await gw.plugin.requests.page({}, 10);
    assert.equal(requests.filter((r) => r.coalesced).length, 4);
  });
});

test('a batch starts when its window closes; keys keep batches apart', async () => {
  await withGateway({ hooks: { mappings: [ci({ seconds: 1, maxItems: 100, key: '{{repo}}' })] } }, async (gw) => {
    const a1 = await post(gw.url, '/hooks/ci', { job: 1, repo: 'a' });
    const b1 = await post(gw.url, '/hooks/ci', { job: 2, repo: 'b' });
    const a2 = await post(gw.url, '/hooks/ci', { job: 3, repo: 'a' });
    assert.equal(a1.body.runId, a2.body.runId);
    assert.notEqual(a1.body.runId, b1.body.runId);
    const finals = await gw.finalRuns(2, 20_000);
    assert.deepEqual(finals.map((f) => f.runId).sort(), [a1.body.runId, b1.body.runId].sort());
    const promptOf = (runId: string) => gw.rec.turns.find((t) => t.runId === runId)!.prompt;
    assert.match(promptOf(a1.body.runId), /job 1 failed[^]*job 3 failed/);
    assert.doesNotMatch(promptOf(a1.body.runId), /job 2/);
    assert.match(promptOf(b1.body.runId), /^1 requests to hook ci/);
  });
});

test('a batch counts as one run in budgets; a batch past the budget is digested, never run', async () => {
  await withGateway(
    { hooks: { mappings: [ci({ seconds: 600, maxItems: 2 }, { budget: { runs: 1, perSeconds: 600 } })] } },
    async (gw) => {
      for (const job of [1, 2, 3, 4]) assert.equal((await post(gw.url, '/hooks/ci', { job })).body.coalesced, true);
      await gw.finalRuns(1);
      await waitUntil(() => gw.plugin.budgets.digestsWaiting === 2, 'the second batch digested');
      const ci = (await coreAdmin(gw, 'GET', 'hooks')).hooks.find((h: { name: string }) => h.name === 'ci');
      assert.equal(ci.budgets[0].runs, 1, 'the first batch counted as one run');
      assert.equal(gw.rec.turns.length, 1);
    },
  );
});

test('coalesce is for agent mappings without forEach: a config error names the key', async () => {
  await assert.rejects(
    withGateway(
      {
        hooks: {
          mappings: [
            { id: 'w', match: { path: 'w' }, action: 'wake', textTemplate: 'x', coalesce: { seconds: 5, maxItems: 2 } },
          ],
        },
      },
      async () => {},
    ),
    /hooks\.mappings\[0\][^]*\.coalesce is for agent mappings/,
  );
});
