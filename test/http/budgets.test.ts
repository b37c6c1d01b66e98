// Budgets over loopback HTTP: runs past a hook's budget never reach the model. digest (default) keeps
// them and lists them once, when the window ends, in one main-session event (each text wrapped as
// untrusted) with one heartbeat; hold runs them in order as windows free; refuse answers 429 with
// Retry-After. Tokens reported by a run count; budgets, and digests waiting, outlive a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startTestGateway, withGateway, type TestGateway, coreAdmin } from '../helpers/recording-host.ts';
import { assertError, waitUntil } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { dryRun, loadForDryRun } from '../../plugin/kits/config.ts';

const START = /<<<EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]{24}">>>/g;

const digests = (gw: TestGateway) => gw.rec.events.filter((e) => e.text.includes('over its budget'));

test('digest: runs past the budget are kept, never run, and listed once when the window ends', async () => {
  await withGateway({ hooks: { endpoints: { agent: { budget: { runs: 2, perSeconds: 3 } } } } }, async (gw) => {
    // Together: the five land in one window however the machine schedules them.
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        post(gw.url, '/hooks/agent', { message: `alert number ${i}`, deliver: false, wakeMode: 'next-heartbeat' }),
      ),
    );
    const ran = answers.filter((a) => typeof a.body.runId === 'string');
    const digested = answers.filter((a) => a.body.digested === true);
    assert.equal(ran.length, 2, JSON.stringify(answers.map((a) => a.body)));
    assert.equal(digested.length, 3);
    for (const a of digested) {
      assert.equal(a.status, 202);
      assert.deepEqual(a.body, { ok: true, digested: true, requestId: a.body.requestId });
      assert.equal(typeof a.body.requestId, 'string');
    }
    await gw.finalRuns(2);
    await waitUntil(() => digests(gw).length === 1, 'the digest at the window end', 20_000);
    const [event] = digests(gw);
    assert.equal(event!.sessionKey, 'agent:main:main');
    assert.equal(event!.meta.hook, 'agent');
    const lines = event!.text.split('\n');
    assert.equal(lines[0], 'Hook agent: 3 events over its budget (2 runs per 3 s):');
    assert.equal(event!.text.match(START)?.length, 3, 'each text wrapped on its own');
    const digestedTexts = answers
      .map((a, i) => ({ a, i }))
      .filter(({ a }) => a.body.digested)
      .map(({ i }) => `alert number ${i}`);
    for (const text of digestedTexts) assert.ok(event!.text.includes(text), text);
    assert.deepEqual(gw.rec.heartbeats, [{ agentId: 'main', reason: 'hook:agent' }]);
    assert.equal(gw.rec.turns.length, 2, 'nothing digested ran');
    // A new window: the next request runs.
    const next = await post(gw.url, '/hooks/agent', { message: 'after the window', deliver: false });
    assert.equal(typeof next.body.runId, 'string', JSON.stringify(next.body));
    await gw.finalRuns(3);
    assert.equal(digests(gw).length, 1, 'one digest per window');
  });
});

test('digest: texts clipped to 200 characters, at most 50 listed and the rest counted', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'ci',
            match: { path: 'ci' },
            action: 'agent',
            deliver: false,
            messageTemplate: '{{text}}',
            budget: { runs: 1, perSeconds: 3 },
          },
        ],
      },
    },
    async (gw) => {
      const first = await post(gw.url, '/hooks/ci', { text: 'the first' });
      assert.equal(typeof first.body.runId, 'string');
      const long = 'x'.repeat(500);
      const answers = await Promise.all(
        Array.from({ length: 53 }, (_, i) => post(gw.url, '/hooks/ci', { text: `${i}:${long}` })),
      );
      assert.ok(answers.every((a) => a.body.digested === true));
      await waitUntil(() => digests(gw).length === 1, 'the digest', 20_000);
      const { text } = digests(gw)[0]!;
      assert.match(text, /^Hook ci: 53 events over its budget \(1 runs per 3 s\):\n/);
      assert.equal(text.match(START)?.length, 50);
      assert.match(text, /\(3 more not listed\)$/);
      const clipped = /\d+:x+…/.exec(text)![0];
      assert.equal(clipped.length, 200);
      assert.equal(gw.rec.turns.length, 1);
    },
  );
});

test('the budget of all hooks: one digest named hooks, each text after its hook name', async () => {
  const mapping = (id: string) => ({
    id,
    match: { path: id },
    action: 'agent',
    deliver: false,
    messageTemplate: '{{t}}',
  });
  await withGateway(
    { hooks: { budget: { runs: 1, perSeconds: 3 }, mappings: [mapping('alpha'), mapping('beta')] } },
    async (gw) => {
      const first = await post(gw.url, '/hooks/alpha', { t: 'runs' });
      assert.equal(typeof first.body.runId, 'string');
      assert.equal((await post(gw.url, '/hooks/beta', { t: 'from beta' })).body.digested, true);
      assert.equal((await post(gw.url, '/hooks/alpha', { t: 'from alpha' })).body.digested, true);
      await waitUntil(() => digests(gw).length === 1, 'the digest', 20_000);
      const { text, meta } = digests(gw)[0]!;
      assert.equal(meta.hook, 'hooks');
      const lines = text.split('\n');
      assert.equal(lines[0], 'Hook hooks: 2 events over its budget (1 runs per 3 s):');
      assert.ok(lines.some((l) => /^beta: <<<EXTERNAL_UNTRUSTED_CONTENT/.test(l)));
      assert.ok(lines.some((l) => /^alpha: <<<EXTERNAL_UNTRUSTED_CONTENT/.test(l)));
      assert.ok(text.indexOf('from beta') < text.indexOf('from alpha'), 'in arrival order');
      assert.equal(gw.rec.turns.length, 1);
    },
  );
});

test('refuse: 429 budget_exhausted with Retry-After at the window end; nothing runs', async () => {
  await withGateway(
    { hooks: { endpoints: { agent: { budget: { runs: 1, perSeconds: 600, overflow: 'refuse' } } } } },
    async (gw) => {
      assert.equal((await post(gw.url, '/hooks/agent', { message: 'one', deliver: false })).status, 202);
      const refused = await post(gw.url, '/hooks/agent', { message: 'two', deliver: false });
      assertError(refused, 429, 'budget_exhausted');
      const retryAfter = Number(refused.headers!.get('retry-after'));
      assert.ok(retryAfter > 1 && retryAfter <= 600, String(retryAfter));
      await gw.finalRuns(1);
      assert.equal(gw.rec.turns.length, 1);
      assert.equal(digests(gw).length, 0);
    },
  );
});

test('hold: runs past the budget are held (counted in GET /api/hooks) and run in order as windows end', async () => {
  await withGateway(
    { hooks: { endpoints: { agent: { budget: { runs: 1, perSeconds: 2, overflow: 'hold' } } } } },
    async (gw) => {
      const answers = [];
      for (const i of [0, 1, 2])
        answers.push(await post(gw.url, '/hooks/agent', { message: `job ${i}`, deliver: false }));
      assert.equal(typeof answers[0]!.body.runId, 'string');
      for (const a of answers.slice(1)) assert.deepEqual(a.body, { ok: true, held: true, requestId: a.body.requestId });
      const agent = (await coreAdmin(gw, 'GET', 'hooks')).hooks.find((h: { name: string }) => h.name === 'agent');
      assert.equal(agent.held, 2);
      assert.equal(agent.paused, false);
      await gw.finalRuns(1);
      assert.equal(gw.rec.turns.length, 1, 'the held ones wait for the window');
      await gw.finalRuns(3, 30_000);
      assert.deepEqual(
        gw.rec.turns.map((t) => /job (\d)/.exec(t.prompt)![1]),
        ['0', '1', '2'],
      );
    },
  );
});

test('tokens: a run that reported its usage spends the budget', async () => {
  await withGateway(
    {
      hooks: { endpoints: { agent: { budget: { tokens: 400, perSeconds: 600, overflow: 'refuse' } } } },
      turn: async () => ({ status: 'ok', reply: 'done', usage: { totalTokens: 500 } }),
    },
    async (gw) => {
      assert.equal((await post(gw.url, '/hooks/agent', { message: 'one', deliver: false })).status, 202);
      await gw.finalRuns(1);
      await waitUntil(async () => {
        const agent = (await coreAdmin(gw, 'GET', 'hooks')).hooks.find((h: { name: string }) => h.name === 'agent');
        return agent.budgets?.[0]?.tokens === 500;
      }, 'the tokens counted');
      assertError(await post(gw.url, '/hooks/agent', { message: 'two', deliver: false }), 429, 'budget_exhausted');
      assert.equal(gw.rec.turns.length, 1);
    },
  );
});

test('a budget spent before a restart is still spent after it; a digest waiting is told after it, once', async () => {
  const stateDir = await tempDir('hookgate-budgets-');
  const hooks = {
    endpoints: { agent: { budget: { runs: 1, perSeconds: 600, overflow: 'refuse' } } },
    mappings: [
      {
        id: 'noisy',
        match: { path: 'noisy' },
        action: 'agent',
        deliver: false,
        messageTemplate: '{{t}}',
        budget: { runs: 1, perSeconds: 4 },
      },
    ],
  };
  const first = await startTestGateway({ stateDir, hooks });
  try {
    assert.equal((await post(first.url, '/hooks/agent', { message: 'one', deliver: false })).status, 202);
    assert.equal(typeof (await post(first.url, '/hooks/noisy', { t: 'runs' })).body.runId, 'string');
    assert.equal((await post(first.url, '/hooks/noisy', { t: 'kept over the restart' })).body.digested, true);
    await first.finalRuns(2);
  } finally {
    await first.close();
  }
  assert.equal(digests(first).length, 0, 'the window had not ended');
  const second = await startTestGateway({ stateDir, hooks });
  try {
    assertError(await post(second.url, '/hooks/agent', { message: 'two', deliver: false }), 429, 'budget_exhausted');
    await waitUntil(() => digests(second).length === 1, 'the digest after the restart', 20_000);
    assert.match(digests(second)[0]!.text, /^Hook noisy: 1 events over its budget[^]*kept over the restart/);
    assert.equal(second.rec.turns.length, 0);
  } finally {
    await second.close();
  }
  const third = await startTestGateway({ stateDir, hooks });
  try {
    // Told once: the record is gone.
    assert.equal(digests(third).length, 0);
    assert.equal(third.plugin.budgets.digestsWaiting, 0);
  } finally {
    await third.close();
  }
});

test('the dry run says what a budget or a batch would do with the request, nothing counted', async () => {
  const mapping = (id: string, extra: object) => ({
    id,
    match: { path: id },
    action: 'agent',
    deliver: false,
    messageTemplate: '{{t}}',
    ...extra,
  });
  await withGateway(
    {
      hooks: {
        mappings: [
          mapping('held', { budget: { runs: 1, perSeconds: 600, overflow: 'hold' } }),
          mapping('digested', { budget: { runs: 1, perSeconds: 600 } }),
          mapping('batched', { coalesce: { seconds: 60, maxItems: 5 } }),
        ],
      },
    },
    async (gw) => {
      const { snapshot } = await loadForDryRun(gw.host);
      const noTransforms = { run: () => Promise.reject(new Error('no transform here')) };
      const body = Buffer.from(JSON.stringify({ t: 'x' }));
      const spent = { start: Date.now(), runs: 1, tokens: 0 };
      const budgetWindows = new Map([
        ['hook:held', spent],
        ['hook:digested', spent],
      ]);
      const tried = (name: string, windows?: typeof budgetWindows) =>
        dryRun({ name, headers: {}, body, budgetWindows: windows }, snapshot, gw.host, noTransforms);
      const held = await tried('held', budgetWindows);
      assert.match(held.spend!, /^would be held by its budget: held's budget of 1 runs per 600 s is spent until /);
      assert.equal(held.answer!.body!.held, true);
      const digested = await tried('digested', budgetWindows);
      assert.match(digested.spend!, /^would be digested: /);
      assert.equal(digested.answer!.body!.digested, true);
      const fresh = await tried('digested');
      assert.equal(fresh.spend, undefined);
      assert.equal(typeof fresh.answer!.body!.runId, 'string');
      const batched = await tried('batched');
      assert.match(batched.spend!, /^would be coalesced: /);
      assert.equal(batched.answer!.body!.coalesced, true);
      assert.equal(gw.rec.turns.length, 0);
    },
  );
});

test('runs held for a budget outlive a restart: the hook is not taken for paused, they run as windows end', async () => {
  const stateDir = await tempDir('hookgate-budget-hold-');
  const hooks = { endpoints: { agent: { budget: { runs: 1, perSeconds: 3, overflow: 'hold' } } } };
  const first = await startTestGateway({ stateDir, hooks });
  try {
    assert.equal(
      typeof (await post(first.url, '/hooks/agent', { message: 'job 0', deliver: false })).body.runId,
      'string',
    );
    assert.equal((await post(first.url, '/hooks/agent', { message: 'job 1', deliver: false })).body.held, true);
    await first.finalRuns(1);
  } finally {
    await first.close();
  }
  const second = await startTestGateway({ stateDir, hooks });
  try {
    const agent = (await coreAdmin(second, 'GET', 'hooks')).hooks.find((h: { name: string }) => h.name === 'agent');
    assert.equal(agent.paused, false);
    await second.finalRuns(1, 30_000);
    assert.match(second.rec.turns[0]!.prompt, /job 1/);
    assert.equal(second.rec.logs.filter((l) => /pause state lost/.test(l.msg)).length, 0);
  } finally {
    await second.close();
  }
});
