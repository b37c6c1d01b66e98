// waitForCompletion in the core, over HTTP with a recording host: the delivery's fact as the host's
// receipt settles it (the answer waits for it), a host refusing the delivery, a fan-out's shape, the
// limit on followed runs, a shutdown ending the waits, and what a transform and a config may not do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SendResult, TurnResult } from '../../plugin/host.ts';
import { post, startTestGateway, withGateway } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';
import { startRedis } from '../helpers/redis-server.ts';

const waited = (more: Record<string, unknown> = {}) => ({ message: 'x', waitForCompletion: true, ...more });

test("the delivery fact is the reply queue's outcome: the answer waits until the try settles (sent)", async () => {
  let settle!: (result: SendResult) => void;
  const tried = new Promise<SendResult>((resolve) => (settle = resolve));
  await withGateway(
    { turn: async () => ({ status: 'ok', reply: 'Deploy finished' }), send: () => tried },
    async (gw) => {
      const answer = post(gw.url, '/hooks/agent', waited({ channel: 'slack', to: 'C1' }));
      await waitUntil(() => gw.rec.deliveries.length === 1, 'the delivery');
      let answered = false;
      void answer.then(() => (answered = true));
      await gw.finalRuns(1);
      assert.equal(answered, false, 'not answered before the delivery settled');
      settle({ status: 'sent', messageIds: ['m1'] });
      const r = await answer;
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, {
        ok: true,
        runId: r.body.runId,
        status: 'ok',
        reply: 'visible',
        delivery: { channel: 'slack', to: 'C1', status: 'sent' },
      });
    },
  );
});

test('a delivery that fails after its attempts, or that the host refuses, is failed', async () => {
  let refuse = false;
  await withGateway(
    {
      turn: async () => ({ status: 'ok', reply: 'hello' }),
      send: async () => ({
        status: 'failed',
        retryable: false,
        description: 'chat not found',
        sentParts: 0,
        messageIds: [],
      }),
      // The host's history refusing the reply (an outbox it cannot write) refuses the delivery itself.
      replyHistory: {
        added: async () => {
          if (refuse) throw new Error('outbox unwritable');
        },
        changed: async () => {},
      },
    },
    async (gw) => {
      const failed = await post(gw.url, '/hooks/agent', waited({ channel: 'telegram', to: '9' }));
      assert.deepEqual(failed.body.delivery, { channel: 'telegram', to: '9', status: 'failed' });
      assert.equal(failed.body.status, 'ok');
      refuse = true;
      const refused = await post(gw.url, '/hooks/agent', waited({ channel: 'telegram', to: '9' }));
      assert.equal(refused.body.status, 'error');
      assert.deepEqual(refused.body.delivery, { channel: 'telegram', to: '9', status: 'failed' });
    },
  );
});

test('a fan-out waits for every run: runs in order, one status for all', async () => {
  await withGateway(
    {
      turn: async (t): Promise<TurnResult> =>
        t.prompt.includes('alert bad') ? { status: 'error', error: 'no' } : { status: 'ok', reply: 'fine' },
      hooks: {
        mappings: [
          {
            id: 'alerts',
            match: { path: 'alerts' },
            action: 'agent',
            deliver: false,
            forEach: 'alerts',
            messageTemplate: 'alert {{item}}',
            waitForCompletion: true,
          },
        ],
      },
    },
    async (gw) => {
      const r = await post(gw.url, '/hooks/alerts', { alerts: ['good', 'bad', 'good'] });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'error');
      assert.equal(r.body.runIds.length, 3);
      assert.equal(r.body.runId, r.body.runIds[0]);
      assert.deepEqual(
        r.body.runs.map((x: any) => [x.runId, x.status, x.reply]),
        [
          [r.body.runIds[0], 'ok', 'visible'],
          [r.body.runIds[1], 'error', 'none'],
          [r.body.runIds[2], 'ok', 'visible'],
        ],
      );
    },
  );
});

test(
  'past maxQueuedRuns + maxConcurrentRuns followed runs, a waited request is answered at once, 202 running',
  { timeout: 30_000 },
  async () => {
    // Runs that ended but whose deliveries never settle stay followed, outside the run queue.
    const gw = await startTestGateway({
      hooks: { maxConcurrentRuns: 1, maxQueuedRuns: 1, maxWaitSeconds: 60 },
      turn: async () => ({ status: 'ok', reply: 'r' }),
      send: () => new Promise<SendResult>(() => {}),
    });
    try {
      const first = post(gw.url, '/hooks/agent', waited({ channel: 'slack', to: 'C1' }));
      await waitUntil(() => gw.rec.deliveries.length === 1, 'the first delivery');
      const second = post(gw.url, '/hooks/agent', waited({ channel: 'slack', to: 'C1' }));
      await waitUntil(() => gw.rec.deliveries.length === 2, 'the second delivery');
      // Two followed: the third is not; it does not wait for its (quick) run at all.
      const third = await post(gw.url, '/hooks/agent', waited({ channel: 'slack', to: 'C1' }));
      assert.equal(third.status, 202);
      assert.deepEqual(third.body, { ok: true, runId: third.body.runId, status: 'running' });
      gw.plugin.stopWaiting();
      for (const r of [await first, await second]) assert.equal(r.body.status, 'running');
    } finally {
      await gw.close();
    }
  },
);

test('a shutdown answers the waiting requests at once with 202 running', async () => {
  const gw = await startTestGateway({ turn: () => new Promise(() => {}) });
  const answer = post(gw.url, '/hooks/agent', waited({ deliver: false }));
  await waitUntil(() => gw.plugin.runs.running === 1, 'the run started');
  gw.plugin.stopWaiting();
  const r = await answer;
  assert.equal(r.status, 202);
  assert.deepEqual(r.body, { ok: true, runId: r.body.runId, status: 'running' });
  await gw.close();
});

test('a transform cannot turn waiting on; a mapping cannot wait and respond', async () => {
  await withGateway(
    {
      files: {
        'hooks/transforms/wait.ts': `export default () => ({ message: 'hi', waitForCompletion: true });`,
      },
      hooks: {
        mappings: [
          { id: 'sly', match: { path: 'sly' }, action: 'agent', deliver: false, transform: { module: 'wait.ts' } },
        ],
      },
    },
    async (gw) => {
      const r = await post(gw.url, '/hooks/sly', {});
      assert.equal(r.status, 500);
      assert.equal(r.body.code, 'mapping_failed');
      assert.equal(gw.rec.turns.length, 0);
    },
  );
  await assert.rejects(
    startTestGateway({
      hooks: {
        mappings: [
          {
            id: 'both',
            match: { path: 'both' },
            messageTemplate: 'x',
            waitForCompletion: true,
            respond: { status: 200, body: { ok: 1 } },
          },
        ],
      },
    }),
    /waitForCompletion and respond cannot be used together/,
  );
});

test(
  'with hooks.sharedState, the final outcome replaces the key kept on Redis: another instance answers it',
  { timeout: 30_000 },
  async () => {
    const redis = await startRedis();
    const shared = { sharedState: { redis: redis.url, keyPrefix: 'wait:' } };
    let release!: () => void;
    const a = await startTestGateway({
      hooks: { ...shared, maxWaitSeconds: 1 },
      turn: () => new Promise((resolve) => (release = () => resolve({ status: 'ok', reply: 'HEARTBEAT_OK' }))),
    });
    const b = await startTestGateway({ hooks: shared });
    try {
      const body = waited({ deliver: false });
      const headers = { 'idempotency-key': 'shared-wait-1' };
      const first = await post(a.url, '/hooks/agent', body, { headers });
      assert.equal(first.status, 202);
      assert.equal(first.body.status, 'running');
      // On the other instance, before the end: the kept 202, answered at once (the run is not followed there).
      const early = await post(b.url, '/hooks/agent', body, { headers });
      assert.deepEqual(early.body, { ok: true, runId: first.body.runId, duplicate: true });
      release();
      await a.finalRuns(1);
      // Redis is told the outcome just after the run ends: asked until it answers it (or the test times out).
      let late = await post(b.url, '/hooks/agent', body, { headers });
      while (late.status !== 200) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        late = await post(b.url, '/hooks/agent', body, { headers });
      }
      assert.deepEqual(late.body, {
        ok: true,
        runId: first.body.runId,
        status: 'ok',
        reply: 'silent',
        duplicate: true,
      });
      assert.equal(b.rec.turns.length, 0, 'the other instance ran nothing');
    } finally {
      await a.close();
      await b.close();
      await redis.stop();
    }
  },
);
