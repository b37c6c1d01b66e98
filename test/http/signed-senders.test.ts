// Signed senders through the real HTTP server. The senders' own libraries sign (GitHub's
// @octokit/webhooks-methods, Stripe's stripe, Standard Webhooks' standardwebhooks); Slack, Shopify
// and Linear, which publish no signing library, are checked against vectors from their documentation
// or computed independently, and signed in the tests with node:crypto following their documentation.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import fc from 'fast-check';
import { HOOK_TOKEN, post, startTestGateway, withGateway, type TestGateway } from '../helpers/recording-host.ts';

const GITHUB_OLD = 'github-secret-before-rotation';
const GITHUB_NEW = 'github-secret-after-rotation';
const STRIPE_SECRET = 'whsec_stripe_endpoint_secret_0123';
const SLACK_SECRET = 'slack-signing-secret-0123456789';
const SW_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SHOPIFY_SECRET = 'shopify-app-secret-0123456789';
const LINEAR_SECRET = 'linear-webhook-secret-0123456789';
const GITLAB_SECRET = 'gitlab-secret-token-0123456789';
const BEARER_SECRET = 'alertmanager-bearer-0123456789';
const BASIC_SECRET = 'home-assistant-password-0123';
const HMAC_SECRET = 'generic-hmac-secret-0123456789';

const stripe = new Stripe('sk_test_unused');
const hex = (key: string, ...parts: string[]): string =>
  parts.reduce((h, p) => h.update(p), createHmac('sha256', key)).digest('hex');
const now = (): number => Math.floor(Date.now() / 1000);
/** A delivery id per body, as senders give each new delivery its own (one id with two bodies is a 422). */
const deliveryId = (body: string): string => createHash('sha256').update(body).digest('hex').slice(0, 24);

type Headers = Record<string, string>;
interface Scheme {
  name: string;
  /** Signs body with secret at the given Unix time, as the sender would. */
  sign(body: string, secret: string, ts: number): Promise<Headers> | Headers;
  secret: string;
  /** A second secret the mapping also accepts (rotation). */
  other?: string;
  /** Whether the proof carries a timestamp the window applies to. */
  timestamped: boolean;
  /** For Linear the timestamp is in the payload: the body is built around it. */
  body?(ts: number): string;
  /** Headers that make the proof malformed rather than wrong. */
  malformed: Headers;
}

const schemes: Scheme[] = [
  {
    name: 'github',
    secret: GITHUB_OLD,
    other: GITHUB_NEW,
    timestamped: false,
    sign: async (body, secret) => ({
      'x-hub-signature-256': await githubSign(secret, body),
      'x-github-delivery': 'd-1',
    }),
    malformed: { 'x-hub-signature-256': 'sha1=abc' },
  },
  {
    name: 'stripe',
    secret: STRIPE_SECRET,
    timestamped: true,
    sign: (body, secret, ts) => ({
      'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: ts }),
    }),
    malformed: { 'stripe-signature': 't=notanumber,v1=zz' },
  },
  {
    name: 'slack',
    secret: SLACK_SECRET,
    timestamped: true,
    sign: (body, secret, ts) => ({
      'x-slack-signature': `v0=${hex(secret, `v0:${ts}:`, body)}`,
      'x-slack-request-timestamp': String(ts),
    }),
    malformed: { 'x-slack-signature': 'v1=00', 'x-slack-request-timestamp': 'yesterday' },
  },
  {
    name: 'standard-webhooks',
    secret: SW_SECRET,
    timestamped: true,
    sign: (body, secret, ts) => ({
      'webhook-id': `msg_${deliveryId(body)}`,
      'webhook-timestamp': String(ts),
      'webhook-signature': new Webhook(secret).sign(`msg_${deliveryId(body)}`, new Date(ts * 1000), body),
    }),
    malformed: { 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1' },
  },
  {
    name: 'shopify',
    secret: SHOPIFY_SECRET,
    timestamped: false,
    sign: (body, secret) => ({ 'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body).digest('base64') }),
    malformed: { 'x-shopify-hmac-sha256': '!!!' },
  },
  {
    name: 'linear',
    secret: LINEAR_SECRET,
    timestamped: true,
    body: (ts) =>
      JSON.stringify({ action: 'create', type: 'Issue', data: { title: 'Bug' }, webhookTimestamp: ts * 1000 }),
    sign: (body, secret) => ({ 'linear-signature': hex(secret, body), 'linear-delivery': deliveryId(body) }),
    malformed: { 'linear-signature': 'not-hex' },
  },
  {
    name: 'gitlab',
    secret: GITLAB_SECRET,
    timestamped: false,
    sign: (_body, secret) => ({ 'x-gitlab-token': secret }),
    malformed: { 'x-gitlab-token': '' },
  },
  {
    name: 'bearer',
    secret: BEARER_SECRET,
    timestamped: false,
    sign: (_body, secret) => ({ authorization: `Bearer ${secret}` }),
    malformed: { authorization: 'Bearer' },
  },
  {
    name: 'basic',
    secret: BASIC_SECRET,
    timestamped: false,
    sign: (_body, secret) => ({ authorization: `Basic ${Buffer.from(`alertmanager:${secret}`).toString('base64')}` }),
    malformed: { authorization: 'Basic not-base64-and-no-colon' },
  },
  {
    name: 'hmac',
    secret: HMAC_SECRET,
    timestamped: true,
    sign: (body, secret, ts) => ({
      'x-signature': `sha512=${createHmac('sha512', secret).update(`${ts}.${body}`).digest('base64')}`,
      'x-timestamp': String(ts),
    }),
    malformed: { 'x-signature': 'sha512', 'x-timestamp': '' },
  },
];

function verifyFor(s: Scheme): Record<string, unknown> {
  const secrets = s.other ? { secrets: [s.secret, s.other] } : { secret: s.secret };
  if (s.name === 'basic') return { scheme: 'basic', username: 'alertmanager', ...secrets };
  if (s.name === 'hmac') {
    return {
      scheme: 'hmac',
      header: 'X-Signature',
      algorithm: 'sha512',
      encoding: 'base64',
      prefix: 'sha512=',
      timestampHeader: 'X-Timestamp',
      ...secrets,
    };
  }
  return { scheme: s.name, ...secrets };
}

let gw: TestGateway;
before(async () => {
  gw = await startTestGateway({
    hooks: {
      // Every case below fails from the same address: only the lockout test counts failures.
      authRateLimit: { maxFailures: 100_000, windowSeconds: 60, lockoutSeconds: 60 },
      mappings: schemes.map((s) => ({
        id: s.name,
        match: { path: s.name },
        action: 'wake',
        textTemplate: `${s.name}: {{data.title}}`,
        allowUnsafeExternalContent: true,
        verify: verifyFor(s),
      })),
    },
  });
});
after(() => gw.close());

async function send(path: string, body: string, headers: Headers): Promise<{ status: number; body: any }> {
  const r = await post(gw.url, `/hooks/${path}`, undefined, { rawBody: body, headers, token: null });
  return { status: r.status, body: r.body };
}

for (const s of schemes) {
  describe(`verify: ${s.name}`, () => {
    const bodyAt = (ts: number): string =>
      s.body?.(ts) ?? JSON.stringify({ data: { title: 'Deploy' }, id: 'evt_1', event_id: 'Ev1' });
    const expectInvalid = (r: { status: number; body: any }, why: string): void => {
      assert.equal(r.status, 401, `${why}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 'signature_invalid', why);
    };

    test('a valid delivery is accepted; the hook token alone is not', async () => {
      const ts = now();
      const body = bodyAt(ts);
      const ok = await send(s.name, body, await s.sign(body, s.secret, ts));
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(gw.rec.events.at(-1)!.text, `${s.name}: ${s.name === 'linear' ? 'Bug' : 'Deploy'}`);
      const tokenOnly = await post(gw.url, `/hooks/${s.name}`, undefined, { rawBody: body });
      assert.equal(tokenOnly.status, 401);
    });

    test('tampered body, wrong secret, missing and malformed proof are signature_invalid', async () => {
      const ts = now();
      const body = bodyAt(ts);
      const signed = await s.sign(body, s.secret, ts);
      if (!['gitlab', 'bearer', 'basic'].includes(s.name)) {
        expectInvalid(await send(s.name, body.replace('Deploy', 'Deplox').replace('Bug', 'Bux'), signed), 'tampered');
        // The same JSON with other whitespace is other bytes: the signature covers the bytes.
        expectInvalid(await send(s.name, JSON.stringify(JSON.parse(body), null, 1), signed), 're-serialised');
      }
      const wrong =
        s.name === 'standard-webhooks'
          ? `whsec_${Buffer.from('another-key').toString('base64')}`
          : 'not-the-secret-at-all';
      expectInvalid(await send(s.name, body, await s.sign(body, wrong, ts)), 'wrong secret');
      expectInvalid(await send(s.name, body, {}), 'missing');
      expectInvalid(await send(s.name, body, s.malformed), 'malformed');
    });

    if (s.other) {
      test('rotation: the old and the new secret both verify', async () => {
        const ts = now();
        const body = bodyAt(ts);
        assert.equal((await send(s.name, body, await s.sign(body, s.secret, ts))).status, 200);
        assert.equal((await send(s.name, body, await s.sign(body, s.other!, ts))).status, 200);
      });
    }

    if (s.timestamped) {
      test('a timestamp too old or too far ahead is signature_expired; so is a valid request replayed after the window', async () => {
        for (const offset of [-600, 600]) {
          const ts = now() + offset;
          const body = bodyAt(ts);
          const r = await send(s.name, body, await s.sign(body, s.secret, ts));
          assert.equal(r.status, 401, `offset ${offset}`);
          assert.equal(r.body.code, 'signature_expired', `offset ${offset}`);
        }
        // Inside the window either way is fine.
        for (const offset of [-30, 30]) {
          const ts = now() + offset;
          const body = bodyAt(ts);
          assert.equal((await send(s.name, body, await s.sign(body, s.secret, ts))).status, 200, `offset ${offset}`);
        }
      });
    }
  });
}

test('Standard Webhooks senders using the svix-* header names verify too', async () => {
  const ts = now();
  const body = JSON.stringify({ data: { title: 'Svix' } });
  const headers = (await schemes.find((s) => s.name === 'standard-webhooks')!.sign(body, SW_SECRET, ts)) as Headers;
  const svix: Headers = {};
  for (const [k, v] of Object.entries(headers)) svix[k.replace('webhook-', 'svix-')] = v;
  assert.equal((await send('standard-webhooks', body, svix)).status, 200);
});

test('an unknown hook name without a valid token is 401, never 404; with the token it is 404', async () => {
  const r = await post(gw.url, '/hooks/no-such-hook', { x: 1 }, { token: null });
  assert.equal(r.status, 401);
  assert.equal(r.body.code, 'unauthorized');
  assert.equal((await post(gw.url, '/hooks/no-such-hook', { x: 1 })).status, 404);
});

test('signature headers never reach a template', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'gh',
            match: { path: 'gh' },
            action: 'wake',
            allowUnsafeExternalContent: true,
            textTemplate: '[{{headers.x-hub-signature-256}}][{{headers.x-github-delivery}}]',
            verify: { scheme: 'github', secret: GITHUB_OLD },
          },
        ],
      },
    },
    async (own) => {
      const body = '{"a":1}';
      const r = await post(own.url, '/hooks/gh', undefined, {
        rawBody: body,
        token: null,
        headers: { 'x-hub-signature-256': await githubSign(GITHUB_OLD, body), 'x-github-delivery': 'abc' },
      });
      assert.equal(r.status, 200);
      assert.equal(own.rec.events.at(-1)!.text, '[][abc]');
    },
  );
});

test('repeated bad signatures lock the address: 429 before any verification, even for a valid one', async () => {
  await withGateway(
    {
      hooks: {
        authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30 },
        mappings: [
          {
            id: 'gh',
            match: { path: 'gh' },
            action: 'wake',
            textTemplate: 'x',
            verify: { scheme: 'github', secret: GITHUB_OLD },
          },
        ],
      },
    },
    async (own) => {
      const body = '{"a":1}';
      for (let i = 0; i < 3; i++) {
        const r = await post(own.url, '/hooks/gh', undefined, {
          rawBody: body,
          token: null,
          headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(63)}${i}` },
        });
        assert.equal(r.status, 401);
      }
      const valid = await post(own.url, '/hooks/gh', undefined, {
        rawBody: body,
        token: null,
        headers: { 'x-hub-signature-256': await githubSign(GITHUB_OLD, body) },
      });
      assert.equal(valid.status, 429);
      assert.equal(valid.body.code, 'rate_limited');
      assert.ok(Number(valid.headers.get('retry-after')) > 0);
    },
  );
});

test('form bodies: a signed Slack slash command, and a GitHub form delivery read as its JSON', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          {
            id: 'slash',
            match: { path: 'slash' },
            action: 'wake',
            body: 'form',
            allowUnsafeExternalContent: true,
            textTemplate: '{{command}} {{text}} by {{user_name}} [{{tag}}]',
            verify: { scheme: 'slack', secret: SLACK_SECRET },
          },
          {
            id: 'ghform',
            match: { path: 'ghform' },
            action: 'wake',
            body: 'form',
            allowUnsafeExternalContent: true,
            textTemplate: '{{action}} {{issue.title}}',
            verify: { scheme: 'github', secret: GITHUB_OLD },
          },
        ],
      },
    },
    async (own) => {
      const ts = now();
      const form = 'command=%2Fdeploy&text=api+now&user_name=ada&tag=a&tag=b&__proto__=x';
      const r = await post(own.url, '/hooks/slash', undefined, {
        rawBody: form,
        token: null,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-slack-signature': `v0=${hex(SLACK_SECRET, `v0:${ts}:`, form)}`,
          'x-slack-request-timestamp': String(ts),
        },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(own.rec.events.at(-1)!.text, '/deploy api now by ada [["a","b"]]');
      assert.equal(({} as Record<string, unknown>).x, undefined);

      const json = JSON.stringify({ action: 'opened', issue: { title: 'Form delivery' } });
      const ghForm = `payload=${encodeURIComponent(json)}`;
      const g = await post(own.url, '/hooks/ghform', undefined, {
        rawBody: ghForm,
        token: null,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-hub-signature-256': await githubSign(GITHUB_OLD, ghForm),
        },
      });
      assert.equal(g.status, 200, JSON.stringify(g.body));
      assert.equal(own.rec.events.at(-1)!.text, 'opened Form delivery');
    },
  );
});

test('hook token rotation: an array of tokens, "${ENV}" and tokenFile are all accepted', async () => {
  process.env.HOOKGATE_TEST_HOOK_TOKEN = 'token-from-the-environment-0123';
  try {
    await withGateway(
      {
        files: { 'hook-token.txt': 'token-from-a-file-0123456789\n' },
        hooks: {
          token: [HOOK_TOKEN, 'the-next-hook-token-0123456', '${HOOKGATE_TEST_HOOK_TOKEN}'],
          tokenFile: 'hook-token.txt',
        },
      },
      async (own) => {
        for (const token of [
          HOOK_TOKEN,
          'the-next-hook-token-0123456',
          'token-from-the-environment-0123',
          'token-from-a-file-0123456789',
        ]) {
          assert.equal((await post(own.url, '/hooks/wake', { text: 'rotated' }, { token })).status, 200, token);
        }
        assert.equal((await post(own.url, '/hooks/wake', { text: 'x' }, { token: 'none-of-them' })).status, 401);
      },
    );
  } finally {
    delete process.env.HOOKGATE_TEST_HOOK_TOKEN;
  }
});

test('fuzzed signature headers never give a 5xx', async () => {
  const names = [
    'x-hub-signature-256',
    'stripe-signature',
    'x-slack-signature',
    'x-slack-request-timestamp',
    'webhook-id',
    'webhook-timestamp',
    'webhook-signature',
    'x-shopify-hmac-sha256',
    'linear-signature',
    'x-gitlab-token',
    'authorization',
    'x-signature',
    'x-timestamp',
  ];
  const headerValue = fc.string({
    maxLength: 200,
    unit: fc.constantFrom(...'abcdefv0123456789=,.; tsha/+_-'.split('')),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...schemes.map((s) => s.name)),
      fc.dictionary(fc.constantFrom(...names), headerValue, { maxKeys: 6 }),
      fc.string({ maxLength: 100 }),
      async (path, headers, body) => {
        const r = await send(path, body || '{}', headers);
        assert.ok(r.status === 401 || r.status === 400, `${path} ${JSON.stringify(headers)} -> ${r.status}`);
      },
    ),
    { numRuns: 300, seed: 0x5eed_0019 },
  );
});
