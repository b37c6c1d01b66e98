// Verifiers against vectors from outside this project: Slack's documented example request, a Shopify
// vector computed by another implementation (SQLPage's tests), and a Linear vector computed with
// `openssl dgst -sha256 -hmac`. Then the config problems a verify block can have, each naming its key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileVerifier, type VerifyConfig } from '../../plugin/verify/compile-verifier.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

const ctx = { configDir: '/nonexistent', gatewayToken: 'the-gateway-token-0123456789' };
const LONG = 'a-long-enough-secret-0123';
/** A Standard Webhooks secret of 24 random-looking bytes, also long enough for every other scheme. */
const GOOD_WHSEC = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

function verifier(v: VerifyConfig) {
  const problems: string[] = [];
  const out = compileVerifier(v, 'hooks.mappings[0].verify', ctx, problems);
  assert.deepEqual(problems, []);
  return out!;
}

function problemsOf(v: VerifyConfig, context = ctx): string[] {
  const problems: string[] = [];
  assert.equal(compileVerifier(v, 'hooks.mappings[0].verify', context, problems), undefined);
  return problems;
}

test("slack: the example request from Slack's documentation verifies at its own time, and only then", () => {
  const body =
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar' +
    '&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com' +
    '%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
  const headers = {
    'x-slack-request-timestamp': '1531420618',
    'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
  };
  const v = verifier({ scheme: 'slack', secret: '8f742231b10e8888abcd99yyyzzz85a5' });
  assert.deepEqual(v.verify({ headers, body: Buffer.from(body), nowMs: 1531420618_000 + 10_000 }), { ok: true });
  // A signature is no credential a rotation could make valid: nothing is kept of it for the limiter.
  assert.deepEqual(v.verify({ headers, body: Buffer.from(body), nowMs: Date.now() }), { ok: false, expired: true });
  const tampered = v.verify({ headers, body: Buffer.from(`${body}x`), nowMs: 1531420618_000 });
  assert.equal(tampered.ok, false);
  assert.equal(!tampered.ok && tampered.expired, false);
});

test('shopify: a vector computed by another implementation verifies; one byte off does not', () => {
  const body = Buffer.from('{"id":1234567890,"email":"customer@example.com","total_price":"123.45"}');
  const v = verifier({ scheme: 'shopify', secret: 'test-webhook-secret' });
  const headers = {
    'x-shopify-hmac-sha256': 'QNyObTlKbMx2qDlPF/ZOZcBqg5OgPg+2oky3zldc0Gw=',
    'x-shopify-webhook-id': 'w-1',
  };
  assert.deepEqual(v.verify({ headers, body, nowMs: Date.now() }), { ok: true });
  assert.equal(v.deliveryId(headers, {}), 'w-1');
  assert.equal(
    v.verify({ headers: { 'x-shopify-hmac-sha256': 'RNyObTlKbMx2qDlPF/ZOZcBqg5OgPg+2oky3zldc0Gw=' }, body, nowMs: 0 })
      .ok,
    false,
  );
});

test('linear: an openssl-computed vector verifies; its payload timestamp must be within a minute', () => {
  const text =
    '{"action":"create","type":"Issue","data":{"id":"2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9","title":"Webhook test"},"webhookTimestamp":1676056940508}';
  const v = verifier({ scheme: 'linear', secret: 'lin_wh_test_secret' });
  const headers = {
    'linear-signature': '783bdf21981d96142045552992c6561c56a3a49c9af9b2b366b1d101a52c6966',
    'linear-delivery': 'del-1',
  };
  assert.deepEqual(v.verify({ headers, body: Buffer.from(text), nowMs: 0 }), { ok: true });
  const payload = JSON.parse(text);
  assert.equal(v.fresh!(payload, 1676056940508 + 59_000), true);
  assert.equal(v.fresh!(payload, 1676056940508 + 61_000), false);
  assert.equal(v.fresh!(payload, 1676056940508 - 61_000), false);
  assert.equal(v.fresh!({ ...payload, webhookTimestamp: 'soon' }, 1676056940508), false);
  assert.equal(v.deliveryId(headers, payload), 'del-1');
});

test('delivery ids: each scheme names the one its sender retries with', () => {
  const id = (scheme: VerifyConfig['scheme'], headers: Record<string, string>, payload: Record<string, unknown> = {}) =>
    verifier({ scheme, secret: GOOD_WHSEC, ...(scheme === 'basic' ? { username: 'u' } : {}) }).deliveryId(
      headers,
      payload,
    );
  assert.equal(id('github', { 'x-github-delivery': 'g-1' }), 'g-1');
  assert.equal(id('stripe', {}, { id: 'evt_1' }), 'evt_1');
  assert.equal(id('slack', {}, { event_id: 'Ev1' }), 'Ev1');
  assert.equal(id('standard-webhooks', { 'svix-id': 'msg_1' }), 'msg_1');
  assert.equal(id('gitlab', { 'x-gitlab-event-uuid': 'uuid-1' }), 'uuid-1');
  assert.equal(id('gitlab', { 'idempotency-key': 'key-1', 'x-gitlab-event-uuid': 'uuid-1' }), 'key-1');
  assert.equal(id('bearer', { 'x-github-delivery': 'g-1' }), undefined);
});

test('config problems name the key: missing, doubled, blank or unset secret; keys of another scheme', () => {
  assert.deepEqual(problemsOf({ scheme: 'github' }), [
    'hooks.mappings[0].verify needs exactly one of secret, secrets or secretFile',
  ]);
  assert.match(
    problemsOf({ scheme: 'github', secret: 'a', secrets: ['b'] })[0]!,
    /needs exactly one of secret, secrets or secretFile/,
  );
  delete process.env.HOOKGATE_UNSET_FOR_TEST;
  assert.deepEqual(problemsOf({ scheme: 'github', secret: '${HOOKGATE_UNSET_FOR_TEST}' }), [
    'hooks.mappings[0].verify.secret: environment variable HOOKGATE_UNSET_FOR_TEST is not set',
  ]);
  assert.deepEqual(problemsOf({ scheme: 'github', secrets: ['ok-secret-0123456789', '   '] }), [
    'hooks.mappings[0].verify.secrets[1] must not be blank',
  ]);
  assert.deepEqual(problemsOf({ scheme: 'basic', secret: LONG }), [
    'hooks.mappings[0].verify.username is required by the basic scheme',
  ]);
  assert.deepEqual(problemsOf({ scheme: 'github', secret: LONG, header: 'x-sig' }), [
    'hooks.mappings[0].verify.header belongs to the hmac scheme only',
  ]);
  assert.deepEqual(problemsOf({ scheme: 'hmac', secret: LONG }), [
    'hooks.mappings[0].verify.header is required by the hmac scheme',
  ]);
  assert.match(
    problemsOf({ scheme: 'standard-webhooks', secret: 'whsec_not base64!' })[0]!,
    /"whsec_" followed by base64/,
  );
});

test('a secret equal to the gateway token is refused; secret files are read, and an unreadable one is named', async () => {
  assert.deepEqual(problemsOf({ scheme: 'github', secrets: ['fine-secret-0123456789', ctx.gatewayToken] }), [
    'hooks.mappings[0].verify: a secret must differ from gateway.auth.token',
  ]);
  const dir = await tempDir('hookgate-verify-');
  await writeFile(path.join(dir, 'github.secret'), '  from-a-file-0123456789\n');
  const problems: string[] = [];
  const v = compileVerifier(
    { scheme: 'gitlab', secretFile: 'github.secret' },
    'k',
    { ...ctx, configDir: dir },
    problems,
  );
  assert.deepEqual(problems, []);
  assert.deepEqual(
    v!.verify({ headers: { 'x-gitlab-token': 'from-a-file-0123456789' }, body: Buffer.alloc(0), nowMs: 0 }),
    {
      ok: true,
    },
  );
  const missing = problemsOf({ scheme: 'github', secretFile: 'nope.secret' }, { ...ctx, configDir: dir });
  assert.equal(missing.length, 1);
  assert.match(missing[0]!, /^hooks\.mappings\[0\]\.verify\.secretFile: cannot read .*nope\.secret \(ENOENT\)$/);
});

test('bearer and basic: a wrong secret is reported as presented (for the limiter), and what passes is listed', () => {
  const bearer = verifier({ scheme: 'bearer', secrets: ['bearer-one-0123456789', 'bearer-two-0123456789'] });
  assert.deepEqual(bearer.verify({ headers: { authorization: 'Bearer a-guess' }, body: Buffer.alloc(0), nowMs: 0 }), {
    ok: false,
    expired: false,
    presented: 'a-guess',
  });
  assert.deepEqual(bearer.accepted?.(), ['bearer-one-0123456789', 'bearer-two-0123456789']);
  const basic = verifier({ scheme: 'basic', username: 'am', secret: 'basic-secret-0123456789' });
  const authorization = `Basic ${Buffer.from('am:wrong').toString('base64')}`;
  assert.deepEqual(basic.verify({ headers: { authorization }, body: Buffer.alloc(0), nowMs: 0 }), {
    ok: false,
    expired: false,
    presented: 'am:wrong',
  });
  assert.deepEqual(basic.accepted?.(), ['am:basic-secret-0123456789']);
});

test('secrets too short for their scheme are refused, naming the key; real secret formats pass', () => {
  assert.deepEqual(problemsOf({ scheme: 'standard-webhooks', secret: 'whsec_A' }), [
    'hooks.mappings[0].verify.secret (after "whsec_", base64-decoded) must be at least 24 bytes (use a random value, e.g. `openssl rand -hex 32`)',
  ]);
  // Svix and Clerk hand out 24-byte keys; 18 bytes is below the standard's minimum.
  assert.deepEqual(
    problemsOf({ scheme: 'standard-webhooks', secret: `whsec_${Buffer.alloc(18, 1).toString('base64')}` }).length,
    1,
  );
  verifier({ scheme: 'standard-webhooks', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });
  assert.match(
    problemsOf({ scheme: 'stripe', secret: 'whsec_A' })[0]!,
    /^hooks\.mappings\[0\]\.verify\.secret \(after "whsec_"\) must be at least 16 bytes/,
  );
  assert.equal(problemsOf({ scheme: 'stripe', secret: 'whsec_0123456789' }).length, 1, '"whsec_" does not count');
  verifier({ scheme: 'stripe', secret: 'whsec_5f8a0c1b2d3e4f5a6b7c8d9e0f1a2b3c' });
  for (const scheme of ['github', 'slack', 'shopify', 'linear', 'gitlab', 'bearer'] as const) {
    assert.deepEqual(problemsOf({ scheme, secrets: [LONG, 'short'] }), [
      'hooks.mappings[0].verify.secrets[1] must be at least 16 bytes (use a random value, e.g. `openssl rand -hex 32`)',
    ]);
  }
  assert.match(
    problemsOf({ scheme: 'basic', username: 'alertmanager', secret: 'hunter2' })[0]!,
    /verify\.secret must be at least 16 bytes/,
  );
  assert.match(
    problemsOf({ scheme: 'hmac', header: 'x-sig', secret: 'k' })[0]!,
    /verify\.secret must be at least 16 bytes/,
  );
  // Exactly 16 bytes is enough (GitHub and GitLab accept any secret the user picks).
  verifier({ scheme: 'github', secret: '0123456789abcdef' });
});

test('an empty key verifies nothing at run time, whatever reached the verifier', async () => {
  const { createVerifier } = await import('../../plugin/verify/schemes.ts');
  const { createHmac } = await import('node:crypto');
  const body = Buffer.from('{"a":1}');
  const emptyKeySig = createHmac('sha256', Buffer.alloc(0)).update(body).digest('hex');
  const github = createVerifier('github', { keys: [Buffer.alloc(0)], toleranceSeconds: 300 });
  assert.equal(
    github.verify({ headers: { 'x-hub-signature-256': `sha256=${emptyKeySig}` }, body, nowMs: 0 }).ok,
    false,
  );
  const bearer = createVerifier('bearer', { keys: [Buffer.alloc(0)], toleranceSeconds: 300 });
  assert.equal(bearer.verify({ headers: { authorization: 'Bearer ' }, body, nowMs: 0 }).ok, false);
  const gitlab = createVerifier('gitlab', { keys: [Buffer.alloc(0)], toleranceSeconds: 300 });
  assert.equal(gitlab.verify({ headers: { 'x-gitlab-token': '' }, body, nowMs: 0 }).ok, false);
});
