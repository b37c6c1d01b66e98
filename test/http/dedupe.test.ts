// Exactly once over the real HTTP server: Idempotency-Key on wake and agent, a mapping's dedupe.key,
// and senders' delivery ids (a GitHub redelivery, a Stripe retry, a Standard Webhooks retry), signed
// by the senders' own libraries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { post, withGateway } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';

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
