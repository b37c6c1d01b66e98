// Duplicates answered before the body is parsed: a key the headers alone decide (Idempotency-Key on
// wake and agent, a GitHub delivery id) that was answered before gets its first answer without the
// body being parsed or validated, still after the token and the signature, and still 422 for
// another body. Keys kept by an earlier process without a body hash show it: the body may then be
// anything, even malformed JSON, and the first answer still comes back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { post, withGateway } from '../helpers/recording-host.ts';
import { assertError } from '../helpers/common.ts';
import type { IdempotencyRecord } from '../../plugin/host.ts';

const GH = 'gh-secret-for-the-repeat-0123';
const key = (k: string, headers: Record<string, string> = {}) => ({ headers: { 'idempotency-key': k, ...headers } });
const MALFORMED = '{"text": "deploy 8';

/** A key an earlier process kept before bodies were hashed: any body repeats it. */
const kept = (scope: string, k: string, body: Record<string, unknown>): IdempotencyRecord => ({
  scope,
  key: k,
  at: Date.now() - 1000,
  status: 200,
  body,
});

const github = {
  id: 'gh',
  match: { path: 'gh' },
  action: 'wake',
  textTemplate: 'gh {{action}}',
  verify: { scheme: 'github', secret: GH },
};

test('a repeated Idempotency-Key gets its first answer while the body is malformed JSON: the body is not parsed', async () => {
  await withGateway({ restoreKeys: [kept('wake', 'wake-kept', { ok: true, mode: 'now' })] }, async (gw) => {
    const again = await post(gw.url, '/hooks/wake', undefined, { ...key('wake-kept'), rawBody: MALFORMED });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { ok: true, mode: 'now', duplicate: true });
    assert.equal(again.headers.get('x-hookgate-duplicate'), '1');
    // Without a key, or with a new one, the same body is parsed and refused.
    assertError(await post(gw.url, '/hooks/wake', undefined, { rawBody: MALFORMED }), 400, 'invalid_json');
    assertError(
      await post(gw.url, '/hooks/wake', undefined, { ...key('wake-new'), rawBody: MALFORMED }),
      400,
      'invalid_json',
    );
    assert.equal(gw.rec.events.length, 0);
    // The request log shows the duplicate and its key.
    const logged = gw.rec.logs.find((l) => l.msg === 'hook request' && l.fields?.duplicate === true);
    assert.equal(logged?.fields?.status, 200);
  });
});

test('the repeat comes after the token: a repeated key with a wrong token is 401', async () => {
  await withGateway({ restoreKeys: [kept('wake', 'wake-kept', { ok: true, mode: 'now' })] }, async (gw) => {
    const r = await post(gw.url, '/hooks/wake', undefined, { ...key('wake-kept'), rawBody: MALFORMED, token: 'wrong' });
    assertError(r, 401, 'unauthorized');
  });
});

test('a repeated key with another body is 422 before its body is parsed; an invalid key still waits for the body checks', async () => {
  await withGateway({}, async (gw) => {
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'deploy 812' }, key('reuse-1'))).status, 200);
    // Another body, malformed too: the key's check answers (the body would have been 400 first before).
    const other = await post(gw.url, '/hooks/wake', undefined, { ...key('reuse-1'), rawBody: MALFORMED });
    assertError(other, 422, 'idempotency_key_reused');
    assert.equal(other.headers.get('x-hookgate-duplicate'), null);
    // The same body is still the duplicate.
    const again = await post(gw.url, '/hooks/wake', { text: 'deploy 812' }, key('reuse-1'));
    assert.deepEqual(again.body, { ok: true, mode: 'now', duplicate: true });
    // A key that is not valid decides nothing early: the body's own checks come first, as the plan orders them.
    assertError(
      await post(gw.url, '/hooks/wake', undefined, { ...key('naïve'), rawBody: MALFORMED }),
      400,
      'invalid_json',
    );
    assertError(await post(gw.url, '/hooks/wake', { text: 'x' }, key('naïve')), 400, 'invalid_idempotency_key');
    assert.deepEqual(
      gw.rec.events.map((e) => e.text),
      ['deploy 812'],
    );
  });
});

test("a signed mapping's redelivery is answered before its body is parsed, and only once its signature holds", async () => {
  await withGateway(
    {
      hooks: {
        authRateLimit: { maxFailures: 2, windowSeconds: 60, lockoutSeconds: 60 },
        mappings: [github],
      },
      restoreKeys: [kept('mapping:gh', 'delivery-kept', { ok: true, mode: 'now' })],
    },
    async (gw) => {
      const send = async (delivery: string, body: string, secret = GH) =>
        post(gw.url, '/hooks/gh', undefined, {
          rawBody: body,
          token: null,
          headers: { 'x-github-delivery': delivery, 'x-hub-signature-256': await githubSign(secret, body) },
        });
      // Signed, with a body that is not JSON: the kept delivery's first answer.
      const repeated = await send('delivery-kept', MALFORMED);
      assert.deepEqual(repeated.body, { ok: true, mode: 'now', duplicate: true });
      // A redelivery of a fresh delivery, the usual way.
      const body = '{"action":"opened"}';
      assert.equal((await send('delivery-1', body)).body.duplicate, undefined);
      assert.equal((await send('delivery-1', body)).body.duplicate, true);
      // Signed with another secret: 401, counted against the address, whatever the key has.
      assertError(await send('delivery-1', body, 'another-secret-entirely-0123'), 401, 'signature_invalid');
      assertError(await send('delivery-kept', MALFORMED, 'another-secret-entirely-0123'), 401, 'signature_invalid');
      assertError(await send('delivery-1', body), 429, 'rate_limited');
      assert.equal(gw.rec.events.length, 1);
      assert.match(gw.rec.events[0]!.text, /\ngh opened\n/);
    },
  );
});
