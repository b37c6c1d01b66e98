// The failure book is kept fairly per hook (the endpoint or mapping id, not the run's chosen name): a
// hook-token holder flooding /hooks/agent with large failing runs, each under a name of its own, pushes
// the book past its text bound and evicts only its own oldest failures; older failures of other hooks
// (a run's, a delivery's) stay listed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AdminCall } from '../../plugin/admin/admin-call.ts';
import { MAX_FAILURE_TEXT } from '../../plugin/failures/failures.ts';
import { post, withGateway, type TestGateway } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';

/** Large prompts keep the flood short enough to send one run at a time. */
const PROMPT_CHARS = 2_000_000;
/** Enough to pass the text bound by half again. */
const FLOOD = Math.ceil((1.5 * MAX_FAILURE_TEXT) / PROMPT_CHARS);

async function failures(gw: TestGateway): Promise<any[]> {
  const all: any[] = [];
  let before: string | undefined;
  for (;;) {
    const query = new URLSearchParams({ limit: '1000', state: 'all', ...(before ? { before } : {}) });
    const call: AdminCall = { method: 'GET', parts: ['failures'], query, body: () => Promise.resolve(undefined) };
    const page = (await gw.plugin.admin(call)) as { failures: any[]; before?: string };
    all.push(...page.failures);
    if (!page.before) return all;
    before = page.before;
  }
}

test('a flood of failing runs on one hook evicts only its own oldest failures, never another hook’s', async () => {
  await withGateway(
    {
      hooks: {
        retry: { attempts: 1 },
        maxBodyBytes: 4_000_000,
        mappings: [
          { id: 'alerts', match: { path: 'alerts' }, action: 'agent', messageTemplate: 'alert {{n}}' },
          {
            id: 'notify',
            match: { path: 'notify' },
            action: 'agent',
            messageTemplate: 'deliver me',
            channel: 'telegram',
            to: '1',
          },
        ],
      },
      channels: ['telegram'],
      // Runs fail unless they are the one whose reply the delivery test needs.
      turn: async (turn) =>
        turn.prompt.includes('deliver me')
          ? { status: 'ok', reply: 'a reply' }
          : { status: 'error', error: 'the model is down' },
      send: async () => ({
        status: 'failed',
        retryable: false,
        description: 'chat not found',
        sentParts: 0,
        messageIds: [],
      }),
    },
    async (gw) => {
      const alert = await post(gw.url, '/hooks/alerts', { n: 1 });
      assert.equal(alert.status, 202, JSON.stringify(alert.body));
      const delivery = await post(gw.url, '/hooks/notify', {});
      assert.equal(delivery.status, 202);
      await waitUntil(async () => (await failures(gw)).length === 2, 'the two older failures listed');

      // The flood: /hooks/agent, each run named differently, one ended before the next is sent, so the
      // order they are posted in is the order the book records them in.
      const flood: string[] = [];
      const filler = 'x'.repeat(PROMPT_CHARS);
      for (let i = 0; i < FLOOD; i++) {
        const r = await post(gw.url, '/hooks/agent', { message: `${i} ${filler}`, name: `flood-${i}` });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        flood.push(r.body.runId);
        await gw.finalRun(r.body.runId);
      }
      const last = flood.at(-1)!;
      await waitUntil(
        async () => (await failures(gw)).some((f) => f.runId === last),
        'the last flooded failure recorded',
        120_000,
      );

      const listed = await failures(gw);
      const runIds = new Set(listed.map((f) => f.runId));
      assert.ok(runIds.has(alert.body.runId), 'the older failure of mapping "alerts" stays');
      assert.ok(runIds.has(delivery.body.runId), 'the older delivery failure of mapping "notify" stays');
      const kept = flood.filter((id) => runIds.has(id));
      assert.ok(kept.length < flood.length, 'the flood passed the bound and lost some of its own');
      // What the flood kept is its newest: its oldest went first.
      assert.deepEqual(kept, flood.slice(flood.length - kept.length));
    },
  );
});
