// Reins at the door, through the real HTTP server: filters (match.headers, match.body, match.events)
// choose among mappings sharing a path and answer what none takes as ignored, acting on nothing;
// source allowlists refuse before the body is read; rate limits per hook refuse before the token. The
// signed senders sign with their own libraries, and GitHub's deliveries are its published examples.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { sign as githubSign } from '@octokit/webhooks-methods';
import published from '@octokit/webhooks-examples';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import fc from 'fast-check';
import { HOOK_TOKEN, post, withGateway, type JsonResponse, type TestGateway } from '../helpers/recording-host.ts';
import { assertError, waitUntil } from '../helpers/common.ts';
import { dryRun, loadForDryRun } from '../../plugin/kits/config.ts';

const examples = published as unknown as { name: string; examples: Record<string, unknown>[] }[];
const example = (name: string, action?: string): Record<string, unknown> => {
  const found = examples
    .find((e) => e.name === name)
    ?.examples.find((x) => action === undefined || x.action === action);
  assert.ok(found, `a published ${name}${action ? `.${action}` : ''} example`);
  return found;
};

const GITHUB_SECRET = 'github-secret-for-reins-0123';
const STRIPE_SECRET = 'whsec_stripe_secret_for_reins_0123';
const SW_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const stripe = new Stripe('sk_test_unused');

const IGNORED = { ok: true, ignored: true };

/** A wake mapping on `path` whose text names it: what acted shows in rec.events. */
const wakeOn = (id: string, path: string, extra: Record<string, unknown> = {}) => ({
  id,
  match: { path, ...((extra.match as object | undefined) ?? {}) },
  action: 'wake',
  textTemplate: `${id} acted`,
  ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'match')),
});

const acted = (gw: TestGateway): string[] => gw.rec.events.map((e) => e.text.match(/(\S+) acted/)?.[1] ?? e.text);

async function exposition(gw: TestGateway): Promise<string> {
  return (await gw.plugin.metrics.exposition()).text;
}

function metric(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    const parts = inside.split(',');
    if (wanted.every((w) => parts.includes(w))) return Number(line.slice(line.indexOf('}') + 1));
  }
  return 0;
}

describe('filters', () => {
  test('each condition kind, on headers and on body, holds or leaves the request ignored', async () => {
    await withGateway(
      {
        hooks: {
          mappings: [
            wakeOn('header-equals', 'h-eq', { match: { headers: { 'X-Env': 'prod' } } }),
            wakeOn('header-number', 'h-num', { match: { headers: { 'x-attempt': 3 } } }),
            wakeOn('body-equals', 'b-eq', { match: { body: { count: 3 } } }),
            wakeOn('body-in', 'b-in', { match: { body: { action: { in: ['opened', 'reopened'] } } } }),
            wakeOn('body-notin', 'b-notin', { match: { body: { status: { notIn: ['resolved'] } } } }),
            wakeOn('body-exists', 'b-exists', { match: { body: { 'a.b': { exists: true } } } }),
            wakeOn('body-missing', 'b-missing', { match: { body: { 'a.b': { exists: false } } } }),
            wakeOn('body-prefix', 'b-prefix', { match: { body: { ref: { prefix: 'refs/heads/release/' } } } }),
            wakeOn('header-prefix', 'h-prefix', {
              match: { headers: { 'user-agent': { prefix: 'GitHub-Hookshot/' } } },
            }),
            wakeOn('all-of', 'all', { match: { headers: { 'x-env': 'prod' }, body: { 'items[0].kind': 'alert' } } }),
          ],
        },
      },
      async (gw) => {
        const cases: [string, unknown, Record<string, string>, boolean][] = [
          ['h-eq', {}, { 'x-env': 'prod' }, true],
          ['h-eq', {}, { 'x-env': 'dev' }, false],
          ['h-eq', {}, {}, false],
          ['h-num', {}, { 'x-attempt': '3' }, true],
          ['h-num', {}, { 'x-attempt': '03' }, false],
          ['b-eq', { count: 3 }, {}, true],
          // Body values compare as JSON values: 3 is not "3".
          ['b-eq', { count: '3' }, {}, false],
          ['b-in', { action: 'reopened' }, {}, true],
          ['b-in', { action: 'closed' }, {}, false],
          ['b-in', {}, {}, false],
          // notIn holds for a missing field.
          ['b-notin', {}, {}, true],
          ['b-notin', { status: 'firing' }, {}, true],
          ['b-notin', { status: 'resolved' }, {}, false],
          // null is a value: it exists.
          ['b-exists', { a: { b: null } }, {}, true],
          ['b-exists', { a: {} }, {}, false],
          ['b-missing', { a: {} }, {}, true],
          ['b-missing', { a: { b: null } }, {}, false],
          ['b-prefix', { ref: 'refs/heads/release/1.2' }, {}, true],
          ['b-prefix', { ref: 'refs/heads/main' }, {}, false],
          ['b-prefix', { ref: 7 }, {}, false],
          ['h-prefix', {}, { 'user-agent': 'GitHub-Hookshot/abc' }, true],
          ['h-prefix', {}, { 'user-agent': 'curl/8' }, false],
          ['all', { items: [{ kind: 'alert' }] }, { 'x-env': 'prod' }, true],
          ['all', { items: [{ kind: 'alert' }] }, { 'x-env': 'dev' }, false],
          ['all', { items: [{ kind: 'note' }] }, { 'x-env': 'prod' }, false],
        ];
        for (const [path, body, headers, takes] of cases) {
          const before = gw.rec.events.length;
          const r = await post(gw.url, `/hooks/${path}`, body, { headers });
          const what = `${path} ${JSON.stringify(body)} ${JSON.stringify(headers)}`;
          assert.equal(r.status, 200, what);
          if (takes) {
            assert.equal(r.body.ok, true, what);
            assert.equal(r.body.ignored, undefined, what);
            assert.equal(gw.rec.events.length, before + 1, `${what} acted`);
          } else {
            assert.deepEqual(r.body, IGNORED, what);
            assert.equal(gw.rec.events.length, before, `${what} acted on nothing`);
          }
        }
      },
    );
  });

  test('mappings sharing a path: the first whose conditions hold takes it; none: ignored, counted, logged, no key kept', async () => {
    await withGateway(
      {
        hooks: {
          mappings: [
            wakeOn('firing', 'alerts', { match: { body: { status: 'firing', 'labels.severity': 'critical' } } }),
            wakeOn('resolved', 'alerts', { match: { body: { status: 'resolved' } } }),
            wakeOn('any-firing', 'alerts', { match: { body: { status: 'firing' } } }),
          ],
        },
      },
      async (gw) => {
        const send = (body: unknown, key?: string) =>
          post(gw.url, '/hooks/alerts', body, key ? { headers: { 'idempotency-key': key } } : {});
        assert.equal((await send({ status: 'firing', labels: { severity: 'critical' } })).status, 200);
        assert.equal((await send({ status: 'firing', labels: { severity: 'warning' } })).status, 200);
        assert.equal((await send({ status: 'resolved', labels: { severity: 'critical' } })).status, 200);
        assert.deepEqual(acted(gw), ['firing', 'any-firing', 'resolved']);

        const ignored = await send({ status: 'pending' }, 'k-ignored');
        assert.deepEqual(ignored.body, IGNORED);
        assert.deepEqual(acted(gw), ['firing', 'any-firing', 'resolved'], 'the ignored request acted on nothing');
        // No key kept: the same key with a body a mapping takes acts (it is no duplicate, no 422).
        const later = await send({ status: 'resolved' }, 'k-ignored');
        assert.equal(later.status, 200);
        assert.equal(later.body.duplicate, undefined);
        assert.deepEqual(acted(gw), ['firing', 'any-firing', 'resolved', 'resolved']);

        const text = await exposition(gw);
        assert.equal(metric(text, 'hookgate_reined_total', { endpoint: 'mapping', reason: 'ignored' }), 1);
        const entries = (await gw.plugin.requests.page({}, 1000)).requests;
        const entry = entries.find((e) => e.idempotencyKey === 'k-ignored' && e.ignored);
        assert.ok(entry, 'the request log marks it ignored');
        assert.equal(entry.status, 200);
        const line = gw.rec.logs.find((l) => l.msg === 'hook request' && l.fields?.ignored === true);
        assert.ok(line, 'its log line says ignored');
      },
    );
  });

  test('a name no mapping filters stays 404 when its match.source does not hold (routing, not a filter)', async () => {
    await withGateway(
      { hooks: { mappings: [wakeOn('gh', 'ingest', { match: { source: 'github' } })] } },
      async (gw) => {
        assertError(await post(gw.url, '/hooks/ingest', { source: 'gitlab' }), 404, 'not_found');
      },
    );
  });
});

describe('events, as each signed sender names them', () => {
  test('GitHub: X-GitHub-Event with the action; a name without a dot takes its actions, x.* one more segment', async () => {
    const github = (id: string, events: string[]) =>
      wakeOn(id, 'github', { match: { events }, verify: { scheme: 'github', secret: GITHUB_SECRET } });
    await withGateway(
      {
        hooks: {
          mappings: [
            github('pr-opened', ['pull_request.opened']),
            github('issues', ['issues.*']),
            github('push', ['push']),
          ],
        },
      },
      async (gw) => {
        const deliver = async (event: string, payload: Record<string, unknown>, n: number): Promise<JsonResponse> => {
          const body = JSON.stringify(payload);
          return post(gw.url, '/hooks/github', undefined, {
            rawBody: body,
            token: null,
            headers: {
              'x-github-event': event,
              'x-github-delivery': `delivery-${n}`,
              'x-hub-signature-256': await githubSign(GITHUB_SECRET, body),
            },
          });
        };
        assert.equal((await deliver('pull_request', example('pull_request', 'opened'), 1)).status, 200);
        assert.deepEqual(
          await deliver('pull_request', example('pull_request', 'closed'), 2).then((r) => r.body),
          IGNORED,
        );
        assert.equal((await deliver('issues', example('issues', 'opened'), 3)).status, 200);
        assert.equal((await deliver('push', example('push'), 4)).status, 200);
        assert.deepEqual((await deliver('star', example('star', 'created'), 5)).body, IGNORED);
        // `issues.*` does not take a bare `issues` (a body without an action).
        const { action: _dropped, ...noAction } = example('issues', 'opened');
        assert.deepEqual((await deliver('issues', noAction, 6)).body, IGNORED);
        assert.deepEqual(acted(gw), ['pr-opened', 'issues', 'push']);
        // Verification still comes first: a wrong signature is 401, never ignored.
        const body = JSON.stringify(example('star', 'created'));
        const forged = await post(gw.url, '/hooks/github', undefined, {
          rawBody: body,
          token: null,
          headers: { 'x-github-event': 'star', 'x-hub-signature-256': await githubSign('wrong', body) },
        });
        assertError(forged, 401, 'signature_invalid');
      },
    );
  });

  test("Stripe and Standard Webhooks: the body's type, signed by their own libraries", async () => {
    await withGateway(
      {
        hooks: {
          mappings: [
            wakeOn('invoices', 'stripe', {
              match: { events: ['invoice.*'] },
              verify: { scheme: 'stripe', secret: STRIPE_SECRET },
            }),
            wakeOn('subscriptions', 'stripe', {
              match: { events: ['customer.subscription.deleted'] },
              verify: { scheme: 'stripe', secret: STRIPE_SECRET },
            }),
            wakeOn('users', 'sw', {
              match: { events: ['user'] },
              verify: { scheme: 'standard-webhooks', secret: SW_SECRET },
            }),
          ],
        },
      },
      async (gw) => {
        const toStripe = (type: string, id: string) => {
          const body = JSON.stringify({ id, object: 'event', type, data: { object: {} } });
          const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret: STRIPE_SECRET });
          return post(gw.url, '/hooks/stripe', undefined, {
            rawBody: body,
            token: null,
            headers: { 'stripe-signature': header },
          });
        };
        assert.equal((await toStripe('invoice.paid', 'evt_1')).status, 200);
        assert.equal((await toStripe('customer.subscription.deleted', 'evt_2')).status, 200);
        assert.deepEqual((await toStripe('customer.created', 'evt_3')).body, IGNORED);
        assert.deepEqual((await toStripe('invoice.payment.failed', 'evt_4')).body, IGNORED, '* stands for one segment');

        const wh = new Webhook(SW_SECRET);
        const toSw = (type: string, id: string) => {
          const body = JSON.stringify({ type, data: { id: 'u1' } });
          const at = new Date();
          return post(gw.url, '/hooks/sw', undefined, {
            rawBody: body,
            token: null,
            headers: {
              'webhook-id': id,
              'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
              'webhook-signature': wh.sign(id, at, body),
            },
          });
        };
        assert.equal((await toSw('user.created', 'msg_1')).status, 200);
        assert.deepEqual((await toSw('invoice.created', 'msg_2')).body, IGNORED);
        assert.deepEqual(acted(gw), ['invoices', 'subscriptions', 'users']);
      },
    );
  });
});

/** A request over a trusted proxy, from `client` (X-Forwarded-For). */
const from = (client: string, extra: Record<string, string> = {}) => ({
  headers: { 'x-forwarded-for': client, ...extra },
});

describe('source allowlists', () => {
  test('global and per mapping, IPv4, IPv6 and CIDR edges, through X-Forwarded-For behind a trusted proxy', async () => {
    await withGateway(
      {
        gateway: { trustedProxies: ['127.0.0.1'] },
        hooks: {
          allowedSources: ['203.0.113.0/24', '2001:db8:1::/48', '198.51.100.7'],
          mappings: [wakeOn('open', 'open'), wakeOn('narrow', 'narrow', { allowedSources: ['203.0.113.128/25'] })],
        },
      },
      async (gw) => {
        const admitted = [
          '203.0.113.0',
          '203.0.113.255',
          '198.51.100.7',
          '2001:db8:1::1',
          '2001:db8:1:ffff:ffff:ffff:ffff:ffff',
        ];
        const refused = ['203.0.112.255', '203.0.114.0', '198.51.100.8', '2001:db8:2::1', '2001:db8::1', '10.0.0.1'];
        for (const client of admitted)
          assert.equal((await post(gw.url, '/hooks/open', {}, from(client))).status, 200, client);
        for (const client of refused)
          assertError(await post(gw.url, '/hooks/open', {}, from(client)), 403, 'source_not_allowed');
        // A mapping's list narrows the global one, never widens it.
        assert.equal((await post(gw.url, '/hooks/narrow', {}, from('203.0.113.200'))).status, 200);
        assertError(await post(gw.url, '/hooks/narrow', {}, from('203.0.113.7')), 403, 'source_not_allowed');
        // The whole address counts, not the lockout's /64: 2001:db8:1::/48 admits, a neighbour /64 of
        // 2001:db8::/64 does not.
        assertError(
          await post(gw.url, '/hooks/wake', { text: 'x' }, from('2001:db8:0:0::5')),
          403,
          'source_not_allowed',
        );
        // Before the token: no token at all is 403 here, and it is no authentication failure.
        assertError(
          await post(gw.url, '/hooks/open', {}, { ...from('10.0.0.1'), token: null }),
          403,
          'source_not_allowed',
        );
        assert.equal(gw.plugin.limiter.size, 0, 'no failure counted against any address');
        const text = await exposition(gw);
        assert.equal(metric(text, 'hookgate_auth_failures_total', {}), 0);
        assert.equal(
          metric(text, 'hookgate_reined_total', { endpoint: 'mapping', mapping: 'open', reason: 'source_not_allowed' }),
          refused.length + 1,
        );
        assert.ok(
          (await gw.plugin.requests.page({}, 1000)).requests.some(
            (e) => e.code === 'source_not_allowed' && e.status === 403,
          ),
        );
        assert.deepEqual(acted(gw).length, admitted.length + 1);
      },
    );
  });

  test("a refused source's body is never read: headers alone with a large Content-Length get the 403", async () => {
    await withGateway({ hooks: { allowedSources: ['192.0.2.0/24'], maxBodyBytes: 1_000_000 } }, async (gw) => {
      const { port } = new URL(gw.url);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1');
        let text = '';
        socket.on('data', (d) => {
          text += d.toString('latin1');
          if (text.includes('\r\n\r\n') && /source_not_allowed/.test(text)) {
            socket.destroy();
            resolve(text);
          }
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(text));
        socket.write(
          'POST /hooks/wake HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
            `Authorization: Bearer ${HOOK_TOKEN}\r\nContent-Length: 900000\r\n\r\n`,
        );
        // No body follows: only an answer that does not wait for it arrives.
      });
      assert.match(answer, /^HTTP\/1\.1 403 /);
      assert.match(answer, /"code":"source_not_allowed"/);
    });
  });
});

describe('rate limits per hook', () => {
  test('over the limit: 429 hook_rate_limited with Retry-After, before the token; refusals do not count, admissions do', async () => {
    await withGateway(
      {
        hooks: { mappings: [wakeOn('limited', 'limited', { rateLimit: { requests: 3, perSeconds: 600 } })] },
      },
      async (gw) => {
        const limit = gw.plugin.snapshot().mappings[0]!.rateLimit!;
        assert.equal((await post(gw.url, '/hooks/limited', {})).status, 200);
        // A wrong token the limit admits counts (401), as any outcome does.
        assertError(await post(gw.url, '/hooks/limited', {}, { token: 'wrong-token-0123456789' }), 401, 'unauthorized');
        assert.equal((await post(gw.url, '/hooks/limited', {})).status, 200);
        assert.equal(gw.plugin.rateLimits.counted(limit), 3);
        const failuresBefore = metric(await exposition(gw), 'hookgate_auth_failures_total', {});
        for (let i = 0; i < 5; i++) {
          const over = await post(gw.url, '/hooks/limited', {}, { token: 'wrong-token-0123456789' });
          assertError(over, 429, 'hook_rate_limited');
          const wait = Number(over.headers.get('retry-after'));
          assert.ok(wait >= 1 && wait <= 660, `Retry-After ${wait}`);
        }
        assertError(await post(gw.url, '/hooks/limited', {}), 429, 'hook_rate_limited');
        assert.equal(gw.plugin.rateLimits.counted(limit), 3, 'refused requests are not counted');
        const text = await exposition(gw);
        assert.equal(
          metric(text, 'hookgate_auth_failures_total', {}),
          failuresBefore,
          'the lockout count is untouched',
        );
        assert.equal(metric(text, 'hookgate_reined_total', { mapping: 'limited', reason: 'hook_rate_limited' }), 6);
        assert.deepEqual(acted(gw), ['limited', 'limited']);
        assert.ok(
          (await gw.plugin.requests.page({}, 1000)).requests.some(
            (e) => e.code === 'hook_rate_limited' && e.status === 429,
          ),
        );
      },
    );
  });

  test('the window slides: a request is admitted again once the oldest leaves it', async () => {
    await withGateway({ hooks: { endpoints: { wake: { rateLimit: { requests: 2, perSeconds: 1 } } } } }, async (gw) => {
      assert.equal((await post(gw.url, '/hooks/wake', { text: 'a' })).status, 200);
      assert.equal((await post(gw.url, '/hooks/wake', { text: 'b' })).status, 200);
      const over = await post(gw.url, '/hooks/wake', { text: 'c' });
      assertError(over, 429, 'hook_rate_limited');
      // A request counts until its bucket (a tenth of the window) is a whole window old.
      assert.ok(['1', '2'].includes(over.headers.get('retry-after')!), over.headers.get('retry-after')!);
      let admitted: JsonResponse | undefined;
      await waitUntil(async () => {
        const r = await post(gw.url, '/hooks/wake', { text: 'again' });
        if (r.status === 200) admitted = r;
        else assertError(r, 429, 'hook_rate_limited');
        return admitted !== undefined;
      }, 'a wake admitted after the window');
      assert.deepEqual(
        gw.rec.events.map((e) => e.text),
        ['a', 'b', 'again'],
      );
    });
  });

  test('perClient: each client address has its own count; the agent endpoint has its own limit', async () => {
    await withGateway(
      {
        gateway: { trustedProxies: ['127.0.0.1'] },
        hooks: {
          endpoints: {
            wake: { rateLimit: { requests: 2, perSeconds: 600, perClient: true } },
            agent: { rateLimit: { requests: 1, perSeconds: 600 } },
          },
        },
      },
      async (gw) => {
        for (const n of [1, 2])
          assert.equal((await post(gw.url, '/hooks/wake', { text: `a${n}` }, from('192.0.2.1'))).status, 200);
        assertError(await post(gw.url, '/hooks/wake', { text: 'a3' }, from('192.0.2.1')), 429, 'hook_rate_limited');
        assert.equal((await post(gw.url, '/hooks/wake', { text: 'b1' }, from('192.0.2.2'))).status, 200);
        // IPv6 clients count per /64, as the lockout counts them.
        assert.equal((await post(gw.url, '/hooks/wake', { text: 'c1' }, from('2001:db8::1'))).status, 200);
        assert.equal((await post(gw.url, '/hooks/wake', { text: 'c2' }, from('2001:db8::2'))).status, 200);
        assertError(await post(gw.url, '/hooks/wake', { text: 'c3' }, from('2001:db8::3')), 429, 'hook_rate_limited');
        assert.equal((await post(gw.url, '/hooks/agent', { message: 'm', deliver: false })).status, 202);
        assertError(await post(gw.url, '/hooks/agent', { message: 'm', deliver: false }), 429, 'hook_rate_limited');
      },
    );
  });

  test('a locked address is still refused first (429 rate_limited); the hook limit never locks', async () => {
    await withGateway(
      {
        hooks: {
          authRateLimit: { maxFailures: 2, windowSeconds: 600, lockoutSeconds: 600 },
          endpoints: { wake: { rateLimit: { requests: 1, perSeconds: 600 } } },
        },
      },
      async (gw) => {
        assert.equal((await post(gw.url, '/hooks/wake', { text: 'one' })).status, 200);
        // Many over the hook limit, wrong tokens all: none of them counts toward a lock.
        for (let i = 0; i < 5; i++)
          assertError(
            await post(gw.url, '/hooks/wake', {}, { token: 'wrong-token-0123456789' }),
            429,
            'hook_rate_limited',
          );
        assert.equal(gw.plugin.limiter.lockedFor('127.0.0.1'), 0);
        assert.equal(gw.plugin.limiter.size, 0);
        // The lockout, once taken elsewhere, comes before the hook limit.
        assertError(await post(gw.url, '/hooks/nope', {}, { token: 'wrong-token-0123456789' }), 401, 'unauthorized');
        assertError(await post(gw.url, '/hooks/nope', {}, { token: 'wrong-token-0123456789' }), 401, 'unauthorized');
        assertError(await post(gw.url, '/hooks/wake', { text: 'x' }), 429, 'rate_limited');
      },
    );
  });
});

describe('config', () => {
  test('every new key is taken on hot reload', async () => {
    await withGateway(
      { gateway: { trustedProxies: ['127.0.0.1'] }, hooks: { mappings: [wakeOn('x', 'x')] } },
      async (gw) => {
        assert.equal((await post(gw.url, '/hooks/x', {}, from('192.0.2.9'))).status, 200);
        await writeFile(
          gw.configPath,
          JSON.stringify({
            gateway: { auth: { token: 'gateway-secret-token-abcdef' }, trustedProxies: ['127.0.0.1'] },
            hooks: {
              enabled: true,
              token: HOOK_TOKEN,
              allowedSources: ['192.0.2.0/24'],
              endpoints: { wake: { rateLimit: { requests: 1, perSeconds: 600 } } },
              mappings: [
                wakeOn('x', 'x', {
                  match: { body: { kind: 'keep' }, headers: { 'x-env': 'prod' } },
                  allowedSources: ['192.0.2.9'],
                  rateLimit: { requests: 2, perSeconds: 600 },
                }),
                wakeOn('y', 'y', { match: { events: ['push'] }, verify: { scheme: 'github', secret: GITHUB_SECRET } }),
              ],
            },
          }),
        );
        const reloaded = await gw.plugin.reload();
        assert.equal(reloaded.ok, true, reloaded.ok ? '' : reloaded.error.message);
        assertError(await post(gw.url, '/hooks/x', {}, from('192.0.2.10')), 403, 'source_not_allowed');
        assertError(await post(gw.url, '/hooks/x', {}, from('198.51.100.1')), 403, 'source_not_allowed');
        assert.deepEqual(
          (await post(gw.url, '/hooks/x', { kind: 'drop' }, from('192.0.2.9', { 'x-env': 'prod' }))).body,
          IGNORED,
        );
        assert.equal(
          (await post(gw.url, '/hooks/x', { kind: 'keep' }, from('192.0.2.9', { 'x-env': 'prod' }))).status,
          200,
        );
        assertError(
          await post(gw.url, '/hooks/x', { kind: 'keep' }, from('192.0.2.9', { 'x-env': 'prod' })),
          429,
          'hook_rate_limited',
        );
        assert.equal((await post(gw.url, '/hooks/wake', { text: 'w' }, from('192.0.2.9'))).status, 200);
        assertError(await post(gw.url, '/hooks/wake', { text: 'w' }, from('192.0.2.9')), 429, 'hook_rate_limited');
      },
    );
  });

  test('config errors name the key: a malformed CIDR, a condition of unknown shape, events without a naming sender, paths that disagree', async () => {
    const problems = async (hooks: Record<string, unknown>): Promise<string> => {
      try {
        await withGateway({ hooks }, async () => {});
      } catch (err) {
        return (err as Error).message;
      }
      assert.fail('the config was taken');
    };
    assert.match(
      await problems({ allowedSources: ['10.0.0.0/33'] }),
      /hooks\.allowedSources\[0\]: "10\.0\.0\.0\/33" is not a valid IP address or CIDR/,
    );
    assert.match(
      await problems({ mappings: [wakeOn('a', 'a', { allowedSources: ['192.0.2.1', 'example.com'] })] }),
      /hooks\.mappings\[0\] \(id "a"\)\.allowedSources\[1\]: "example\.com" is not a valid IP address or CIDR/,
    );
    assert.match(
      await problems({ mappings: [wakeOn('a', 'a', { match: { body: { action: { startsWith: 'x' } } } })] }),
      /hooks\.mappings\[0\] \(id "a"\)\.match\.body\["action"\]: a condition is a string or number \(equals\), \{ in: \[\.\.\.\] \}/,
    );
    assert.match(
      await problems({ mappings: [wakeOn('a', 'a', { match: { headers: { 'x-a': { in: [] } } } })] }),
      /hooks\.mappings\[0\] \(id "a"\)\.match\.headers\["x-a"\]\.in must be a non-empty list/,
    );
    assert.match(
      await problems({ mappings: [wakeOn('a', 'a', { match: { events: ['push'] } })] }),
      /hooks\.mappings\[0\] \(id "a"\)\.match\.events needs verify\.scheme/,
    );
    assert.match(
      await problems({
        mappings: [
          wakeOn('a', 'a', { match: { events: ['pull_*'] }, verify: { scheme: 'github', secret: GITHUB_SECRET } }),
        ],
      }),
      /hooks\.mappings\[0\] \(id "a"\)\.match\.events\[0\]/,
    );
    assert.match(
      await problems({
        mappings: [
          wakeOn('a', 'gh', { verify: { scheme: 'github', secret: GITHUB_SECRET } }),
          wakeOn('b', 'gh', { verify: { scheme: 'github', secret: 'another-secret-0123456' } }),
        ],
      }),
      /hooks\.mappings\[1\] \(id "b"\)\.verify must be the same as hooks\.mappings\[0\] \(id "a"\)\.verify/,
    );
    assert.match(
      await problems({
        mappings: [wakeOn('a', 'p', { rateLimit: { requests: 1, perSeconds: 60 } }), wakeOn('b', 'p')],
      }),
      /hooks\.mappings\[1\] \(id "b"\)\.rateLimit must be the same/,
    );
    assert.match(
      await problems({
        mappings: [{ id: 'any', action: 'wake', textTemplate: 't', rateLimit: { requests: 1, perSeconds: 60 } }],
      }),
      /hooks\.mappings\[0\] \(id "any"\)\.rateLimit needs match\.path/,
    );
    assert.match(
      await problems({
        mappings: [
          wakeOn('a', 'a', {
            match: { headers: { 'X-Hub-Signature-256': { exists: true } } },
            verify: { scheme: 'github', secret: GITHUB_SECRET },
          }),
        ],
      }),
      /match\.headers\["X-Hub-Signature-256"\]: the header carries a credential/,
    );
  });
});

describe('the dry run', () => {
  test('names the condition each mapping failed, tries a source, names the rate limit, and does nothing', async () => {
    await withGateway(
      {
        hooks: {
          allowedSources: ['192.0.2.0/24'],
          mappings: [
            wakeOn('firing', 'alerts', {
              match: { body: { status: 'firing' } },
              rateLimit: { requests: 5, perSeconds: 60 },
            }),
            wakeOn('team', 'alerts', {
              match: { headers: { 'x-team': { in: ['ops', 'sre'] } } },
              rateLimit: { requests: 5, perSeconds: 60 },
            }),
          ],
        },
      },
      async (gw) => {
        const { snapshot } = await loadForDryRun(gw.host);
        const noTransforms = { run: () => Promise.reject(new Error('no transform here')) };
        const body = Buffer.from(JSON.stringify({ status: 'resolved' }));
        const r = await dryRun(
          { name: 'alerts', headers: { 'x-team': 'web' }, body, source: '192.0.2.4' },
          snapshot,
          gw.host,
          noTransforms,
        );
        assert.equal(r.refusal, undefined);
        assert.deepEqual(r.answer, { status: 200, body: IGNORED });
        assert.deepEqual(r.ignored, [
          {
            mapping: 'hooks.mappings[0] (id "firing")',
            failed: 'hooks.mappings[0] (id "firing").match.body["status"]: "firing" (found "resolved")',
          },
          {
            mapping: 'hooks.mappings[1] (id "team")',
            failed: 'hooks.mappings[1] (id "team").match.headers["x-team"]: {"in":["ops","sre"]} (found "web")',
          },
        ]);
        assert.ok(
          r.reins.some((l) => /192\.0\.2\.4 is admitted by hooks\.allowedSources/.test(l)),
          r.reins.join('\n'),
        );
        assert.ok(
          r.reins.some((l) => /rate limit: 5 requests per 60 s .*not counted/.test(l)),
          r.reins.join('\n'),
        );

        const refused = await dryRun(
          { name: 'alerts', headers: {}, body, source: '198.51.100.1' },
          snapshot,
          gw.host,
          noTransforms,
        );
        assert.equal(refused.refusal?.code, 'source_not_allowed');
        assert.equal(gw.plugin.rateLimits.size, 0, 'the dry run counted nothing');
        assert.equal(gw.rec.events.length, 0);
      },
    );
  });
});

test('property: a request no filter takes never causes an action', async () => {
  await withGateway(
    {
      hooks: {
        mappings: [
          wakeOn('one', 'p', { match: { body: { kind: { in: ['a', 'b'] }, n: 1 } } }),
          wakeOn('two', 'p', {
            match: { body: { kind: { prefix: 'c' }, flag: { exists: false } }, headers: { 'x-k': { notIn: ['no'] } } },
          }),
        ],
      },
    },
    async (gw) => {
      // The conditions, written again independently of the filter code.
      const takesOne = (p: Record<string, unknown>): boolean => (p.kind === 'a' || p.kind === 'b') && p.n === 1;
      const takesTwo = (p: Record<string, unknown>, k: string | undefined): boolean =>
        typeof p.kind === 'string' && p.kind.startsWith('c') && !('flag' in p) && k !== 'no';
      const value = fc.oneof(
        fc.constantFrom('a', 'b', 'c', 'cc', 'no', '1', 1, 0, true, null),
        fc.string({ maxLength: 3 }),
        fc.integer(),
      );
      const payload = fc.dictionary(fc.constantFrom('kind', 'n', 'flag', 'other'), value, { maxKeys: 4 });
      const headerK = fc.option(fc.constantFrom('no', 'yes', ''), { nil: undefined });
      await fc.assert(
        fc.asyncProperty(payload, headerK, async (p, k) => {
          const before = gw.rec.events.length;
          const r = await post(gw.url, '/hooks/p', p, k === undefined ? {} : { headers: { 'x-k': k } });
          assert.equal(r.status, 200);
          const taken = takesOne(p) || takesTwo(p, k);
          if (!taken) {
            assert.deepEqual(r.body, IGNORED);
            assert.equal(gw.rec.events.length, before, 'an ignored request acted');
          } else {
            assert.equal(gw.rec.events.length, before + 1);
            assert.equal(acted(gw).at(-1), takesOne(p) ? 'one' : 'two');
          }
        }),
        { numRuns: 150 },
      );
    },
  );
});
