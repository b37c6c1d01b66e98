// GET /api/runs over loopback HTTP: the run book's list, the same for every host: each run's hook,
// the request that started it, status, tries, what became of its reply and its delivery; filtered by
// status and hook, paged with `before`; a bad query is a 400 naming the parameter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, withGateway, type TestGateway } from '../helpers/recording-host.ts';
import { assertError, waitUntil } from '../helpers/common.ts';

async function get(gw: TestGateway, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}/api/${p}`);
  return { status: res.status, body: await res.json() };
}

const HOOKS = {
  retry: { attempts: 1 },
  mappings: [{ id: 'github', match: { path: 'github' }, action: 'agent', messageTemplate: 'push {{ref}}' }],
};

test('the runs list: hook, request, status, reply and delivery; filters and paging', async () => {
  await withGateway(
    {
      hooks: HOOKS,
      turn: async (t) =>
        t.prompt.includes('please fail')
          ? { status: 'error', error: 'the model refused' }
          : { status: 'ok', reply: 'done' },
    },
    async (gw) => {
      const delivered = await post(gw.url, '/hooks/agent', {
        message: 'tell the team',
        deliver: true,
        channel: 'telegram',
        to: '42',
      });
      assert.equal(delivered.status, 202);
      const push1 = await post(gw.url, '/hooks/github', { ref: 'main' });
      const push2 = await post(gw.url, '/hooks/github', { ref: 'dev' });
      const failing = await post(gw.url, '/hooks/agent', { message: 'please fail' });
      await gw.finalRuns(4);

      await waitUntil(
        async () => (await get(gw, 'runs')).body.runs[0]?.delivery?.status === 'sent',
        'the delivery settled',
      );
      const { status, body } = await get(gw, 'runs');
      assert.equal(status, 200);
      assert.deepEqual(
        body.runs.map((r: any) => [r.runId, r.hook, r.status]),
        [
          [delivered.body.runId, 'agent', 'ok'],
          [push1.body.runId, 'github', 'ok'],
          [push2.body.runId, 'github', 'ok'],
          [failing.body.runId, 'agent', 'error'],
        ],
      );
      const [first, , , last] = body.runs;
      assert.equal(first.reply, 'visible');
      assert.deepEqual(first.delivery, { channel: 'telegram', to: '42', status: 'sent' });
      assert.equal(first.agentId, 'main');
      assert.match(first.at, /^\d{4}-\d\d-\d\dT/);
      assert.equal(last.error, 'the model refused');
      assert.equal(last.reply, 'none');
      assert.match(last.failureId, /^fail_/);
      assert.ok(!JSON.stringify(body).includes('tell the team'), 'never the prompt');
      assert.ok(!JSON.stringify(body).includes('"done"'), "never the reply's text");
      // The request that started it is the request log's.
      const logged = (await get(gw, `requests/${encodeURIComponent(first.requestId)}`)).body.request;
      assert.deepEqual(logged.runIds, [first.runId]);

      assert.deepEqual(
        (await get(gw, 'runs?status=error')).body.runs.map((r: any) => r.runId),
        [failing.body.runId],
      );
      assert.deepEqual(
        (await get(gw, 'runs?hook=github')).body.runs.map((r: any) => r.runId),
        [push1.body.runId, push2.body.runId],
      );
      const page = await get(gw, 'runs?limit=3');
      assert.equal(page.body.runs.length, 3);
      const older = await get(gw, `runs?limit=3&before=${page.body.before}`);
      assert.deepEqual(
        older.body.runs.map((r: any) => r.runId),
        [delivered.body.runId],
      );
      assert.equal(older.body.before, undefined);

      assertError(await get(gw, 'runs?status=done'), 400, 'bad_request', /status must be one of queued/);
      assertError(await get(gw, 'runs?limit=0'), 400, 'bad_request', /limit/);
      assertError(await get(gw, 'runs?before=x'), 400, 'bad_request', /before/);
      assertError(await get(gw, 'runs?sort=new'), 400, 'bad_request', /unknown parameter "sort"/);
    },
  );
});
