// Exactly once over the real HTTP server: Idempotency-Key on wake and agent, a mapping's dedupe.key,
// and senders' delivery ids (a GitHub redelivery, a Stripe retry, a Standard Webhooks retry), signed
// by the senders' own libraries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { post, withGateway } from '../helpers/recording-host.ts';
import { assertError, waitUntil } from '../helpers/common.ts';

const key = (k: string) => ({ headers: { 'idempotency-key': k } });

test('wake: the same key twice is one event; the second gets the first answer, marked as a duplicate', async () => {
  await withGateway({}, async (gw) => {
    const first = await post(gw.url, '/hooks/wake', { text: 'deploy done' }, key('wake-1'));
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, { ok: true, mode: 'now' });
    assert.equal(first.headers.get('x-hookgate-duplicate'), null);
    const again = await post(gw.url, '/hooks/wake', { text: 'deploy done' }, key('wake-1'));
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { ok: true, mode: 'now', duplicate: true });
    assert.equal(again.headers.get('x-hookgate-duplicate'), '1');
    assert.equal(gw.rec.events.length, 1);
    assert.equal(gw.rec.heartbeats.length, 1);
    // Without a key, or with another, each request acts.
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'deploy done' })).status, 200);
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'deploy done' }, key('wake-2'))).status, 200);
    assert.equal(gw.rec.events.length, 3);
  });
});

test('agent: 100 concurrent requests with one key start one run, and all answer its runId', async () => {
  await withGateway({}, async (gw) => {
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        post(gw.url, '/hooks/agent', { message: 'summarise', deliver: false }, key('agent-1')),
      ),
    );
    assert.ok(answers.every((a) => a.status === 202));
    const runIds = new Set(answers.map((a) => a.body.runId));
    assert.equal(runIds.size, 1);
    assert.equal(answers.filter((a) => a.body.duplicate === true).length, 99);
    await gw.finalRuns(1);
    // Every run is recorded as queued before its 202: with all 100 answered, one queued update is all.
    assert.equal(gw.rec.turns.length, 1);
    assert.equal(gw.rec.runUpdates.filter((u) => u.status === 'queued').length, 1);
    assert.deepEqual(gw.rec.runUpdates.find((u) => u.status === 'queued')!.idempotency?.key, 'agent-1');
  });
});

test('keys are scoped: the same key on wake and on agent are two deliveries', async () => {
  await withGateway({}, async (gw) => {
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'x' }, key('shared'))).body.duplicate, undefined);
    assert.equal(
      (await post(gw.url, '/hooks/agent', { message: 'x', deliver: false }, key('shared'))).body.duplicate,
      undefined,
    );
  });
});

test('a key over 256 characters, empty, or not printable ASCII is 400 invalid_idempotency_key, and nothing happens', async () => {
  await withGateway({}, async (gw) => {
    for (const bad of ['k'.repeat(257), 'naïve']) {
      const r = await post(gw.url, '/hooks/wake', { text: 'x' }, key(bad));
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.code, 'invalid_idempotency_key');
    }
    assert.equal(gw.rec.events.length, 0);
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'x' }, key('k'.repeat(256)))).status, 200);
  });
});

test('a failed first attempt records nothing: the retry is processed', async () => {
  await withGateway({ hooks: { maxQueuedRuns: 0, maxConcurrentRuns: 1 } }, async (gw) => {
    const bad = await post(gw.url, '/hooks/wake', { mode: 'now' }, key('retry-1'));
    assert.equal(bad.status, 400);
    const good = await post(gw.url, '/hooks/wake', { text: 'now valid' }, key('retry-1'));
    assert.equal(good.status, 200);
    assert.equal(good.body.duplicate, undefined);
    assert.equal(gw.rec.events.length, 1);
  });
});

test('after the window a key is processed again', async () => {
  await withGateway({ hooks: { dedupe: { windowSeconds: 0.3 } } }, async (gw) => {
    const first = Date.now();
    await post(gw.url, '/hooks/wake', { text: 'x' }, key('short-lived'));
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'x' }, key('short-lived'))).body.duplicate, true);
    // Duplicates until the window has passed, then processed again.
    await waitUntil(
      async () => (await post(gw.url, '/hooks/wake', { text: 'x' }, key('short-lived'))).body.duplicate === undefined,
      'the key processed again',
    );
    assert.ok(Date.now() - first >= 300, 'not before the window ended');
    assert.equal(gw.rec.events.length, 2);
  });
});

test('maxKeys: the oldest key is forgotten first', async () => {
  await withGateway({ hooks: { dedupe: { maxKeys: 2 } } }, async (gw) => {
    for (const k of ['a', 'b', 'c']) await post(gw.url, '/hooks/wake', { text: k }, key(k));
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'c' }, key('c'))).body.duplicate, true);
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'a' }, key('a'))).body.duplicate, undefined);
  });
});

test('senders retry with the same delivery id: a GitHub redelivery, a Stripe retry, a Standard Webhooks retry', async () => {
  const GH = 'gh-secret-for-dedupe';
  const ST = 'whsec_stripe_for_dedupe';
  const SW = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const stripe = new Stripe('sk_test_unused');
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'gh',
            match: { path: 'gh' },
            action: 'wake',
            textTemplate: 'gh',
            verify: { scheme: 'github', secret: GH },
          },
          {
            id: 'st',
            match: { path: 'st' },
            action: 'wake',
            textTemplate: 'st',
            verify: { scheme: 'stripe', secret: ST },
          },
          {
            id: 'sw',
            match: { path: 'sw' },
            action: 'agent',
            deliver: false,
            messageTemplate: 'sw',
            verify: { scheme: 'standard-webhooks', secret: SW },
          },
        ],
      },
    },
    async (gw) => {
      const ghBody = '{"action":"opened"}';
      const gh = async () =>
        post(gw.url, '/hooks/gh', undefined, {
          rawBody: ghBody,
          token: null,
          headers: { 'x-github-delivery': '72d3162e-cc78', 'x-hub-signature-256': await githubSign(GH, ghBody) },
        });
      assert.equal((await gh()).body.duplicate, undefined);
      assert.equal((await gh()).body.duplicate, true);

      const stBody = '{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","type":"invoice.paid"}';
      const st = (ts: number) =>
        post(gw.url, '/hooks/st', undefined, {
          rawBody: stBody,
          token: null,
          headers: {
            'stripe-signature': stripe.webhooks.generateTestHeaderString({
              payload: stBody,
              secret: ST,
              timestamp: ts,
            }),
          },
        });
      const now = Math.floor(Date.now() / 1000);
      assert.equal((await st(now - 60)).body.duplicate, undefined);
      // The retry carries a new timestamp and signature, and the same event id.
      assert.equal((await st(now)).body.duplicate, true);

      const swBody = '{"type":"user.created"}';
      const sw = (ts: number) =>
        post(gw.url, '/hooks/sw', undefined, {
          rawBody: swBody,
          token: null,
          headers: {
            'webhook-id': 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
            'webhook-timestamp': String(ts),
            'webhook-signature': new Webhook(SW).sign('msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', new Date(ts * 1000), swBody),
          },
        });
      const first = await sw(now - 30);
      const retry = await sw(now);
      assert.equal(retry.body.duplicate, true);
      assert.equal(retry.body.runId, first.body.runId);
      assert.deepEqual(
        gw.rec.events.filter((e) => e.meta.runId === undefined).map((e) => e.meta.hook),
        ['gh', 'st'],
      );
      assert.equal(gw.rec.runUpdates.filter((u) => u.status === 'queued').length, 1);
    },
  );
});

test("a mapping's dedupe.key template names the key; a blank render means no dedupe", async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'ci',
            match: { path: 'ci' },
            action: 'wake',
            textTemplate: 'build {{build.id}}',
            dedupe: { key: '{{build.id}}' },
          },
        ],
      },
    },
    async (gw) => {
      assert.equal((await post(gw.url, '/hooks/ci', { build: { id: 'b-7' } })).body.duplicate, undefined);
      assert.equal((await post(gw.url, '/hooks/ci', { build: { id: 'b-7' } })).body.duplicate, true);
      assert.equal((await post(gw.url, '/hooks/ci', { build: {} })).body.duplicate, undefined);
      assert.equal((await post(gw.url, '/hooks/ci', { build: {} })).body.duplicate, undefined);
      assert.equal(gw.rec.events.length, 3);
    },
  );
});

test('a key sent again with another body is 422 idempotency_key_reused and changes nothing; the same body stays a duplicate', async () => {
  await withGateway({}, async (gw) => {
    const first = await post(gw.url, '/hooks/wake', { text: 'deploy 812 done' }, key('reuse-1'));
    assert.equal(first.status, 200);
    const other = await post(gw.url, '/hooks/wake', { text: 'deploy 813 done' }, key('reuse-1'));
    assertError(other, 422, 'idempotency_key_reused', /another body/);
    assert.equal(other.headers.get('x-hookgate-duplicate'), null);
    // The raw bytes count: the same object sent with other spacing is another body.
    const spaced = await post(gw.url, '/hooks/wake', undefined, {
      ...key('reuse-1'),
      rawBody: '{ "text": "deploy 812 done" }',
    });
    assert.equal(spaced.status, 422);
    const again = await post(gw.url, '/hooks/wake', { text: 'deploy 812 done' }, key('reuse-1'));
    assert.deepEqual(again.body, { ok: true, mode: 'now', duplicate: true });
    assert.deepEqual(
      gw.rec.events.map((e) => e.text),
      ['deploy 812 done'],
    );
  });
});

test('while the first request is in flight: another body is refused at once, the same body waits for its answer', async () => {
  let accept: () => void = () => {};
  const held = new Promise<void>((resolve) => (accept = resolve));
  await withGateway({ runUpdate: (r) => (r.status === 'queued' ? held : undefined) }, async (gw) => {
    const first = post(gw.url, '/hooks/agent', { message: 'summarise 812', deliver: false }, key('flight-1'));
    await waitUntil(() => gw.rec.runUpdates.length === 1, 'the first request in flight');
    const other = await post(gw.url, '/hooks/agent', { message: 'summarise 813', deliver: false }, key('flight-1'));
    assertError(other, 422, 'idempotency_key_reused');
    const same = post(gw.url, '/hooks/agent', { message: 'summarise 812', deliver: false }, key('flight-1'));
    accept();
    const [a, b] = await Promise.all([first, same]);
    assert.equal(a.status, 202);
    assert.deepEqual(b.body, { ...a.body, duplicate: true });
    await gw.finalRuns(1);
    assert.equal(gw.rec.turns.length, 1);
  });
});

test("forEach items keyed by the item are checked per item, not against the request's body", async () => {
  const mapping = {
    id: 'alerts',
    match: { path: 'alerts' },
    action: 'wake',
    forEach: 'alerts',
    textTemplate: 'alert {{item.id}}',
    dedupe: { key: '{{item.id}}' },
  };
  await withGateway({ hooks: { mappings: [mapping] } }, async (gw) => {
    assert.equal((await post(gw.url, '/hooks/alerts', { alerts: [{ id: 'a1' }, { id: 'a2' }] })).status, 200);
    // The next batch lists a2 again beside a new alert: a2 is a duplicate item, not a reused key.
    const next = await post(gw.url, '/hooks/alerts', { alerts: [{ id: 'a2' }, { id: 'a3' }] });
    assert.equal(next.status, 200);
    assert.equal(next.body.duplicates, 1);
    assert.equal(gw.rec.events.length, 3);
  });
});

test("one sender flooding fresh keys never evicts another's: an /agent retry after 100 keys of another mapping is still a duplicate", async () => {
  const FLOOD_SECRET = 'flood-sender-own-bearer-secret-0123';
  const mapping = {
    id: 'flood',
    match: { path: 'flood' },
    action: 'wake',
    textTemplate: 'flood',
    verify: { scheme: 'bearer', secret: FLOOD_SECRET },
  };
  await withGateway({ hooks: { mappings: [mapping], dedupe: { maxKeys: 20 } } }, async (gw) => {
    const run = await post(gw.url, '/hooks/agent', { message: 'real work', deliver: false }, key('real-1'));
    assert.equal(run.status, 202);
    for (let i = 0; i < 100; i++) {
      const r = await post(gw.url, '/hooks/flood', {}, { token: FLOOD_SECRET, ...key(`fresh-${i}`) });
      assert.equal(r.status, 200);
    }
    const retry = await post(gw.url, '/hooks/agent', { message: 'real work', deliver: false }, key('real-1'));
    assert.equal(retry.status, 202);
    assert.deepEqual(retry.body, { ...run.body, duplicate: true });
    await gw.finalRuns(1);
    assert.equal(gw.rec.runUpdates.filter((u) => u.status === 'queued').length, 1, 'one run');
    // The flood's own newest keys are kept in the room left; its early evictions are logged once.
    assert.equal(
      (await post(gw.url, '/hooks/flood', {}, { token: FLOOD_SECRET, ...key('fresh-99') })).body.duplicate,
      true,
    );
    const warned = gw.rec.logs.filter((l) => l.level === 'warn' && /evicted before their window ended/.test(l.msg));
    assert.equal(warned.length, 1);
    assert.equal(warned[0]!.fields?.scope, 'mapping:flood');
  });
});
