// The auth-failure limiter seen through HTTP: threshold, lockout, expiry, per-address keys (trusted
// proxies, IPv4-mapped IPv6, IPv6 /64), its memory bound, and the token comparison.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REFUSALS_LOGGED_PER_SECOND } from '../../plugin/http/refusal-log.ts';
import {
  HOOK_TOKEN,
  post,
  type JsonResponse,
  type TestGateway,
  type TestHostOptions,
  withGateway,
} from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';

const LIMIT = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 2 };

/** A gateway that trusts loopback as a proxy, so X-Forwarded-For picks the client address. */
function behindProxy(limit: Record<string, number> = LIMIT): TestHostOptions {
  return { hooks: { authRateLimit: limit }, gateway: { trustedProxies: ['127.0.0.1'] } };
}

function wake(gw: TestGateway, token: string | null, xff?: string): Promise<JsonResponse> {
  return post(
    gw.url,
    '/hooks/wake',
    { text: 'ping' },
    { token, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } },
  );
}

function assertStatus(r: JsonResponse, status: number, code?: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  if (code) assert.equal(r.body.code, code);
}

/** Each guess a token never sent before (a repeated one counts the same: see lockout.test.ts). */
let guesses = 0;

/** Sends `n` wrong tokens from `xff`, each answered 401. */
async function fail(gw: TestGateway, n: number, xff?: string): Promise<void> {
  for (let i = 0; i < n; i++) assertStatus(await wake(gw, `wrong-${guesses++}`, xff), 401, 'unauthorized');
}

test('threshold: maxFailures wrong tokens are each 401, the next request is 429 with Retry-After', async () => {
  await withGateway(
    { hooks: { authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30 } } },
    async (gw) => {
      await fail(gw, 2);
      // The third failure (a missing token counts too) is still answered 401, and locks.
      assertStatus(await wake(gw, null), 401, 'unauthorized');
      const locked = await wake(gw, 'wrong-again');
      assertStatus(locked, 429, 'rate_limited');
      assert.equal(locked.headers.get('retry-after'), '30');
      assert.match(locked.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(locked.body.ok, false);
      const again = await wake(gw, 'wrong');
      assertStatus(again, 429, 'rate_limited');
      assert.match(again.headers.get('retry-after') ?? '', /^(29|30)$/);
    },
  );
});

test('exactly maxFailures-1 failures leave the address usable', async () => {
  await withGateway({ hooks: { authRateLimit: LIMIT } }, async (gw) => {
    await fail(gw, LIMIT.maxFailures - 1);
    assertStatus(await wake(gw, HOOK_TOKEN), 200);
    assert.equal(gw.rec.events.length, 1);
  });
});

test('the maxFailures-th failure is still 401, then Retry-After equals lockoutSeconds', async () => {
  await withGateway({ hooks: { authRateLimit: LIMIT } }, async (gw) => {
    await fail(gw, LIMIT.maxFailures - 1);
    assertStatus(await wake(gw, 'the-last-straw'), 401, 'unauthorized');
    const r = await wake(gw, 'x');
    assertStatus(r, 429, 'rate_limited');
    assert.equal(r.headers.get('retry-after'), String(LIMIT.lockoutSeconds));
  });
});

test('a lock blocks a correct token too, and the host sees nothing', async () => {
  await withGateway({ hooks: { authRateLimit: LIMIT } }, async (gw) => {
    await fail(gw, LIMIT.maxFailures);
    const r = await wake(gw, HOOK_TOKEN);
    assertStatus(r, 429, 'rate_limited');
    assert.match(r.headers.get('retry-after') ?? '', /^[12]$/);
    const agent = await post(gw.url, '/hooks/agent', { message: 'x' });
    assertStatus(agent, 429, 'rate_limited');
    // Both carriers are blocked.
    assertStatus(
      await post(gw.url, '/hooks/wake', { text: 'x' }, { token: null, headers: { 'x-service-token': HOOK_TOKEN } }),
      429,
    );
    assert.equal(gw.rec.events.length, 0);
    assert.equal(gw.rec.heartbeats.length, 0);
    assert.equal(gw.rec.runUpdates.length, 0);
  });
});

test('the lock expires after lockoutSeconds: the correct token works again', async () => {
  await withGateway({ hooks: { authRateLimit: LIMIT } }, async (gw) => {
    const lockedAt = Date.now(); // no later than the lock
    await fail(gw, LIMIT.maxFailures);
    assertStatus(await wake(gw, HOOK_TOKEN), 429, 'rate_limited');
    // The lock ends with its time: the first request let through comes lockoutSeconds after it began.
    let last = 429;
    await waitUntil(async () => (last = (await wake(gw, HOOK_TOKEN)).status) !== 429, 'the lock to end');
    assert.equal(last, 200);
    assert.ok(Date.now() - lockedAt >= LIMIT.lockoutSeconds * 1000 - 50, 'not before lockoutSeconds');
    assert.equal(gw.rec.events.length, 1);
    // The count started over: one more failure is a plain 401, not an instant lock.
    assertStatus(await wake(gw, 'wrong'), 401, 'unauthorized');
    assertStatus(await wake(gw, HOOK_TOKEN), 200);
  });
});

test('per-address isolation behind a trusted proxy: A locked, B served', async () => {
  await withGateway(behindProxy(), async (gw) => {
    const A = '203.0.113.5';
    const B = '203.0.113.6';
    await fail(gw, LIMIT.maxFailures, A);
    assertStatus(await wake(gw, HOOK_TOKEN, A), 429, 'rate_limited');
    assertStatus(await wake(gw, HOOK_TOKEN, B), 200);
    // B's own failures are counted separately from A's.
    await fail(gw, LIMIT.maxFailures - 1, B);
    assertStatus(await wake(gw, HOOK_TOKEN, B), 200);
    // The proxy itself (no forwarded header) is another address.
    assertStatus(await wake(gw, HOOK_TOKEN), 200);
    assert.equal(gw.rec.events.length, 3);
    const clients = gw.rec.logs.filter((l) => l.msg === 'hook request').map((l) => l.fields?.client);
    assert.ok(clients.includes(A) && clients.includes(B) && clients.includes('127.0.0.1'));
  });
});

test('behind a trusted proxy the rightmost untrusted hop counts: spoofed left hops do not escape a lock', async () => {
  await withGateway(behindProxy(), async (gw) => {
    for (let i = 0; i < LIMIT.maxFailures; i++) {
      assertStatus(await wake(gw, `wrong-${i}`, `198.51.100.${i}, 203.0.113.9`), 401);
    }
    assertStatus(await wake(gw, HOOK_TOKEN, '198.51.100.77, 203.0.113.9'), 429, 'rate_limited');
    assertStatus(await wake(gw, HOOK_TOKEN, '203.0.113.9'), 429, 'rate_limited');
    // Trusted hops on the right are skipped.
    assertStatus(await wake(gw, HOOK_TOKEN, '203.0.113.9, 127.0.0.1'), 429, 'rate_limited');
    assertStatus(await wake(gw, HOOK_TOKEN, '203.0.113.9, 203.0.113.10'), 200);
  });
});

test('without trusted proxies X-Forwarded-For is ignored: varying it does not escape a lock', async () => {
  await withGateway({ hooks: { authRateLimit: LIMIT } }, async (gw) => {
    for (let i = 0; i < LIMIT.maxFailures; i++) assertStatus(await wake(gw, `wrong-${i}`, `10.1.1.${i}`), 401);
    for (const xff of ['10.9.9.9', '192.0.2.1, 10.0.0.1', '::ffff:10.1.1.1', '2001:db8::1']) {
      assertStatus(await wake(gw, HOOK_TOKEN, xff), 429, 'rate_limited');
    }
    assertStatus(await wake(gw, HOOK_TOKEN), 429, 'rate_limited');
    assert.equal(gw.rec.events.length, 0);
    const clients = new Set(gw.rec.logs.filter((l) => l.msg === 'hook request').map((l) => l.fields?.client));
    assert.deepEqual([...clients], ['127.0.0.1']);
  });
});

test('an IPv4-mapped IPv6 address counts as its IPv4 address', async () => {
  await withGateway(behindProxy(), async (gw) => {
    await fail(gw, LIMIT.maxFailures - 1, '::ffff:10.0.0.9');
    assertStatus(await wake(gw, 'wrong-last', '10.0.0.9'), 401);
    // Locked under either spelling, including the expanded and hex forms.
    for (const xff of ['10.0.0.9', '::ffff:10.0.0.9', '::FFFF:10.0.0.9', '0:0:0:0:0:ffff:a00:9']) {
      assertStatus(await wake(gw, HOOK_TOKEN, xff), 429, 'rate_limited');
    }
    assertStatus(await wake(gw, HOOK_TOKEN, '10.0.0.10'), 200);
    const clients = gw.rec.logs.filter((l) => l.msg === 'hook request').map((l) => l.fields?.client);
    assert.equal(clients[0], '10.0.0.9');
  });
});

test('two IPv6 addresses in the same /64 share one lock; another /64 is served', async () => {
  await withGateway(behindProxy(), async (gw) => {
    await fail(gw, 1, '2001:db8:1:2::1');
    await fail(gw, 1, '2001:db8:1:2:aaaa:bbbb:cccc:dddd');
    await fail(gw, 1, '2001:DB8:1:2::FFFF');
    for (const xff of ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002::7']) {
      assertStatus(await wake(gw, HOOK_TOKEN, xff), 429, 'rate_limited');
    }
    assertStatus(await wake(gw, HOOK_TOKEN, '2001:db8:1:3::1'), 200);
    assertStatus(await wake(gw, HOOK_TOKEN, '2001:db8:2:2::1'), 200);
  });
});

test('limiter memory stays bounded: many addresses over HTTP, then a flood of direct failures', async () => {
  await withGateway(behindProxy({ maxFailures: 5, windowSeconds: 60, lockoutSeconds: 60 }), async (gw) => {
    const limits = gw.plugin.snapshot().authRateLimit;
    for (let i = 0; i < 300; i++) {
      const r = await wake(gw, 'wrong', `100.64.${i >> 8}.${i & 0xff}`);
      assertStatus(r, 401);
    }
    assert.equal(gw.plugin.limiter.size, 300);
    for (let i = 0; i < 200_000; i++) gw.plugin.limiter.recordFailure(`key-${i}`, limits);
    assert.ok(gw.plugin.limiter.size <= 65_536, `limiter holds ${gw.plugin.limiter.size} entries`);
    assert.ok(gw.plugin.limiter.size > 60_000, 'the limiter still tracks recent addresses');
    // Still working after the flood: a fresh address gets locked, another one is served.
    await fail(gw, 5, '100.100.100.100');
    assertStatus(await wake(gw, HOOK_TOKEN, '100.100.100.100'), 429, 'rate_limited');
    assertStatus(await wake(gw, HOOK_TOKEN, '100.100.100.101'), 200);
    assert.ok(gw.plugin.limiter.size <= 65_536);
  });
});

test('token comparison: near misses are all 401', async () => {
  await withGateway({}, async (gw) => {
    const last = HOOK_TOKEN.at(-1)!;
    const nearMisses = [
      HOOK_TOKEN.slice(0, -1) + (last === 'x' ? 'y' : 'x'), // differs only in the last char
      HOOK_TOKEN.slice(0, -1), // a prefix
      HOOK_TOKEN.slice(0, 8),
      `${HOOK_TOKEN}x`, // one char more
      HOOK_TOKEN.toUpperCase(),
      `x${HOOK_TOKEN.slice(1)}`, // differs only in the first char
    ];
    for (const token of nearMisses) {
      assert.notEqual(token, HOOK_TOKEN);
      assertStatus(await wake(gw, token), 401, 'unauthorized');
      assertStatus(
        await post(gw.url, '/hooks/wake', { text: 'x' }, { token: null, headers: { 'x-service-token': token } }),
        401,
        'unauthorized',
      );
    }
    assert.equal(gw.rec.events.length, 0);
    assertStatus(await wake(gw, HOOK_TOKEN), 200);
  });
});

test('a flood of refusals is counted, not logged line by line; accepted requests are still logged each', async () => {
  await withGateway(
    { hooks: { authRateLimit: { maxFailures: 1_000_000, windowSeconds: 60, lockoutSeconds: 60 } } },
    async (gw) => {
      const FLOOD = 120;
      const started = performance.now();
      const answers = await Promise.all(Array.from({ length: FLOOD }, (_, i) => wake(gw, `wrong-${i}`)));
      for (const r of answers) assertStatus(r, 401, 'unauthorized');
      for (let i = 0; i < 3; i++) assertStatus(await wake(gw, HOOK_TOKEN), 200);

      const lines = () => gw.rec.logs.filter((l) => l.msg === 'hook request');
      const counted = () => gw.rec.logs.filter((l) => l.msg.startsWith('hook requests refused before authentication'));
      // Each second of the flood (and one it straddled) allows REFUSALS_LOGGED_PER_SECOND lines.
      const seconds = Math.ceil((performance.now() - started) / 1000);
      const logged401 = lines().filter((l) => l.fields?.status === 401).length;
      assert.ok(
        logged401 >= REFUSALS_LOGGED_PER_SECOND && logged401 <= REFUSALS_LOGGED_PER_SECOND * (seconds + 1),
        `${logged401} refusals logged one by one in ${seconds} s`,
      );
      assert.equal(lines().filter((l) => l.fields?.status === 200).length, 3);
      // The rest are reported within about a second, with their count: nothing is lost.
      const total = () => counted().reduce((n, l) => n + Number(l.fields?.count), 0);
      await waitUntil(() => logged401 + total() >= FLOOD, 'the rest counted');
      assert.equal(logged401 + total(), FLOOD);
      assert.equal(
        counted().reduce((n, l) => n + Number(l.fields?.unauthorized), 0),
        total(),
      );
      assert.equal(counted()[0]!.level, 'warn');
    },
  );
});

test('a lock is logged once, with the address and its length', async () => {
  await withGateway(behindProxy(), async (gw) => {
    await fail(gw, LIMIT.maxFailures, '203.0.113.44');
    assertStatus(await wake(gw, HOOK_TOKEN, '203.0.113.44'), 429, 'rate_limited');
    const locks = gw.rec.logs.filter((l) => l.msg === 'client address locked after repeated authentication failures');
    assert.deepEqual(
      locks.map((l) => [l.level, l.fields?.client, l.fields?.seconds]),
      [['warn', '203.0.113.44', LIMIT.lockoutSeconds]],
    );
  });
});
