// hooks.endpoints.agent.acceptedStatus: /hooks/agent answers an accepted run with 200 instead of 202
// (the same body) for senders that bounce anything but 200; mapped hooks and the default keep 202.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, withGateway } from '../helpers/recording-host.ts';

const agentMapping = {
  id: 'ci',
  match: { path: 'ci' },
  action: 'agent',
  messageTemplate: 'CI: {{status}}',
};

test('acceptedStatus 200: /hooks/agent answers 200 with the body a 202 would carry, its repeat too', async () => {
  await withGateway(
    { hooks: { endpoints: { agent: { acceptedStatus: 200 } }, mappings: [agentMapping] } },
    async (gw) => {
      const headers = { 'idempotency-key': 'forward-email-1' };
      const first = await post(gw.url, '/hooks/agent', { message: 'mail arrived' }, { headers });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.ok, true);
      assert.equal(typeof first.body.runId, 'string');
      assert.deepEqual(Object.keys(first.body).sort(), ['ok', 'runId']);
      const again = await post(gw.url, '/hooks/agent', { message: 'mail arrived' }, { headers });
      assert.equal(again.status, 200, 'a repeat of the key is answered as the first was');
      assert.equal(again.body.runId, first.body.runId);
      await gw.finalRun(first.body.runId as string);
      // A mapping chooses its own answer (respond); without one it keeps the spec's 202.
      const mapped = await post(gw.url, '/hooks/ci', { status: 'red' });
      assert.equal(mapped.status, 202, JSON.stringify(mapped.body));
      await gw.finalRun(mapped.body.runId as string);
    },
  );
});

test('by default /hooks/agent answers an accepted run 202', async () => {
  await withGateway({}, async (gw) => {
    const r = await post(gw.url, '/hooks/agent', { message: 'hello' });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    await gw.finalRun(r.body.runId as string);
  });
});

test('acceptedStatus takes only 200 or 202: anything else is a config error naming the key', async () => {
  await assert.rejects(
    withGateway({ hooks: { endpoints: { agent: { acceptedStatus: 201 } } } }, async () => {}),
    /acceptedStatus/,
  );
});
