import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { digestToken, extractToken, tokenMatches } from '../../plugin/auth/token.ts';
import { AuthFailureLimiter, type AuthRateLimit } from '../../plugin/auth/limiter.ts';
import { addressKey } from '../../plugin/http/address-key.ts';
import { clientAddress } from '../../plugin/http/client-address.ts';
import { compileTrustedProxies } from '../../plugin/http/trusted-proxies.ts';

// ---------------------------------------------------------------------------
// token

test('extractToken: bearer scheme', () => {
  assert.equal(extractToken({ authorization: 'Bearer abc123' }), 'abc123');
});

test('extractToken: scheme is case-insensitive', () => {
  assert.equal(extractToken({ authorization: 'bearer abc' }), 'abc');
  assert.equal(extractToken({ authorization: 'BEARER abc' }), 'abc');
  assert.equal(extractToken({ authorization: 'BeArEr abc' }), 'abc');
});

test('extractToken: surrounding spaces are trimmed', () => {
  assert.equal(extractToken({ authorization: '  Bearer    abc  ' }), 'abc');
  assert.equal(extractToken({ authorization: 'Bearer\tabc\t' }), 'abc');
});

test('extractToken: x-service-token', () => {
  assert.equal(extractToken({ 'x-service-token': 'svc' }), 'svc');
  assert.equal(extractToken({ 'x-service-token': '  svc  ' }), 'svc');
});

test('extractToken: x-openclaw-token, after bearer and x-service-token', () => {
  assert.equal(extractToken({ 'x-openclaw-token': ' oc ' }), 'oc');
  assert.equal(extractToken({ 'x-service-token': 'svc', 'x-openclaw-token': 'oc' }), 'svc');
  assert.equal(extractToken({ authorization: 'Bearer a', 'x-openclaw-token': 'oc' }), 'a');
  assert.equal(extractToken({ 'x-service-token': '  ', 'x-openclaw-token': 'oc' }), 'oc');
  assert.equal(extractToken({ 'x-openclaw-token': '' }), undefined);
});

test('extractToken: bearer wins over x-service-token', () => {
  assert.equal(extractToken({ authorization: 'Bearer a', 'x-service-token': 'b' }), 'a');
});

test('extractToken: non-bearer authorization falls back to x-service-token', () => {
  assert.equal(extractToken({ authorization: 'Basic dXNlcjpwYXNz', 'x-service-token': 'b' }), 'b');
  assert.equal(extractToken({ authorization: 'Basic dXNlcjpwYXNz' }), undefined);
  assert.equal(extractToken({ authorization: 'Bearerabc' }), undefined);
});

test('extractToken: missing', () => {
  assert.equal(extractToken({}), undefined);
  assert.equal(extractToken({ 'content-type': 'application/json' }), undefined);
});

test('extractToken: empty values', () => {
  assert.equal(extractToken({ authorization: '' }), undefined);
  assert.equal(extractToken({ authorization: 'Bearer' }), undefined);
  assert.equal(extractToken({ authorization: 'Bearer    ' }), undefined);
  assert.equal(extractToken({ 'x-service-token': '' }), undefined);
  assert.equal(extractToken({ 'x-service-token': '   ' }), undefined);
  assert.equal(extractToken({ authorization: 'Bearer ', 'x-service-token': 'svc' }), 'svc');
});

test('extractToken: duplicated headers use the first value', () => {
  const headers = { 'x-service-token': ['first', 'second'] } as IncomingHttpHeaders;
  assert.equal(extractToken(headers), 'first');
  const auth = { authorization: ['Bearer one', 'Bearer two'] } as unknown as IncomingHttpHeaders;
  assert.equal(extractToken(auth), 'one');
  assert.equal(extractToken({ 'x-service-token': [] } as IncomingHttpHeaders), undefined);
});

test('digestToken: short tokens zero-padded to 256 bytes, long ones as sha256', () => {
  const d = digestToken('secret');
  assert.equal(d.bytes, 6);
  assert.equal(d.padded?.length, 256);
  assert.equal(d.padded?.subarray(0, 6).toString(), 'secret');
  assert.ok(d.padded?.subarray(6).every((b) => b === 0));
  const long = digestToken('x'.repeat(300));
  assert.equal(long.padded, undefined);
  assert.equal(long.sha256?.length, 32);
});

test('tokenMatches: right token', () => {
  assert.equal(tokenMatches('s3cret-token', digestToken('s3cret-token')), true);
  assert.equal(tokenMatches('żółw', digestToken('żółw')), true);
});

test('tokenMatches: wrong token', () => {
  assert.equal(tokenMatches('s3cret-tokeN', digestToken('s3cret-token')), false);
});

test('tokenMatches: different length', () => {
  const expected = digestToken('s3cret-token');
  assert.equal(tokenMatches('s3cret', expected), false);
  assert.equal(tokenMatches('s3cret-token-and-more', expected), false);
  assert.equal(tokenMatches('', expected), false);
});

test('tokenMatches: undefined candidate', () => {
  assert.equal(tokenMatches(undefined, digestToken('x')), false);
});

test('tokenMatches: a candidate padded with NUL bytes, or longer than the slot, never matches', () => {
  const expected = digestToken('s3cret-token');
  assert.equal(tokenMatches('s3cret-token\u0000', expected), false);
  assert.equal(tokenMatches(`s3cret-token${'\u0000'.repeat(300)}`, expected), false);
  assert.equal(tokenMatches('s'.repeat(1000), expected), false);
});

test('tokenMatches: tokens longer than 256 bytes go through sha256 and still match exactly', () => {
  const token = 'k'.repeat(299) + 'z';
  const expected = digestToken(token);
  assert.equal(tokenMatches(token, expected), true);
  assert.equal(tokenMatches(token.slice(0, 299), expected), false);
  assert.equal(tokenMatches(`${token}z`, expected), false);
});

test('tokenMatches: an empty prepared digest never matches', () => {
  assert.equal(tokenMatches('x', { bytes: 1 }), false);
});

// ---------------------------------------------------------------------------
// trusted proxies / client address

function fakeReq(remoteAddress: string | undefined, headers: IncomingHttpHeaders = {}): IncomingMessage {
  return { socket: { remoteAddress }, headers } as unknown as IncomingMessage;
}

test('compileTrustedProxies: undefined and [] give undefined', () => {
  assert.equal(compileTrustedProxies(undefined), undefined);
  assert.equal(compileTrustedProxies([]), undefined);
});

test('compileTrustedProxies: IPs and CIDRs, v4 and v6', () => {
  const t = compileTrustedProxies(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', '192.168.1.0/24']);
  assert.ok(t);
  assert.equal(t.contains('127.0.0.1'), true);
  assert.equal(t.contains('127.0.0.2'), false);
  assert.equal(t.contains('10.200.3.4'), true);
  assert.equal(t.contains('11.0.0.1'), false);
  assert.equal(t.contains('::1'), true);
  assert.equal(t.contains('fd12:3456::1'), true);
  assert.equal(t.contains('fe80::1'), false);
  assert.equal(t.contains('192.168.1.77'), true);
  assert.equal(t.contains('192.168.2.1'), false);
  assert.equal(t.contains('::ffff:10.1.1.1'), true);
  assert.equal(t.contains('not-an-ip'), false);
});

test('compileTrustedProxies: error names the offending index', () => {
  const cases: Array<[string[], number]> = [
    [['127.0.0.1', 'nope'], 1],
    [['10.0.0.0/33'], 0],
    [['127.0.0.1', '::1', 'fd00::/129'], 2],
    [['10.0.0.0/'], 0],
    [['10.0.0.0/8/8'], 0],
    [['10.0.0.0/-1'], 0],
    [['10.0.0.0/ 8'], 0],
    [['256.0.0.1'], 0],
    [['1.2.3.4', '', '::1'], 1],
  ];
  for (const [list, index] of cases) {
    assert.throws(
      () => compileTrustedProxies(list),
      (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.match(err.message, new RegExp(`gateway\\.trustedProxies\\[${index}\\]`));
        return true;
      },
      JSON.stringify(list),
    );
  }
  assert.throws(() => compileTrustedProxies([42 as unknown as string]), /gateway\.trustedProxies\[0\]/);
});

test('clientAddress: no trusted proxies ignores X-Forwarded-For', () => {
  const req = fakeReq('203.0.113.9', { 'x-forwarded-for': '198.51.100.1' });
  assert.equal(clientAddress(req, undefined), '203.0.113.9');
});

test('clientAddress: missing remote address', () => {
  assert.equal(clientAddress(fakeReq(undefined), undefined), 'unknown');
  const trusted = compileTrustedProxies(['127.0.0.1']);
  assert.equal(clientAddress(fakeReq(undefined, { 'x-forwarded-for': '1.2.3.4' }), trusted), 'unknown');
  const gone = { socket: null, headers: {} } as unknown as IncomingMessage;
  assert.equal(clientAddress(gone, trusted), 'unknown');
});

test('clientAddress: trusted peer uses rightmost untrusted hop', () => {
  const trusted = compileTrustedProxies(['127.0.0.1']);
  const req = fakeReq('127.0.0.1', { 'x-forwarded-for': '6.6.6.6, 198.51.100.7' });
  assert.equal(clientAddress(req, trusted), '198.51.100.7');
});

test('clientAddress: trusted peer without X-Forwarded-For uses the peer', () => {
  const trusted = compileTrustedProxies(['127.0.0.1']);
  assert.equal(clientAddress(fakeReq('127.0.0.1'), trusted), '127.0.0.1');
  assert.equal(clientAddress(fakeReq('127.0.0.1', { 'x-forwarded-for': ' , ' }), trusted), '127.0.0.1');
});

test('clientAddress: chain of several trusted hops', () => {
  const trusted = compileTrustedProxies(['10.0.0.0/8', 'fd00::/8']);
  const req = fakeReq('10.0.0.1', {
    'x-forwarded-for': '6.6.6.6, 198.51.100.7, 10.1.1.1, fd00::5,10.2.2.2',
  });
  assert.equal(clientAddress(req, trusted), '198.51.100.7');
});

test('clientAddress: duplicated X-Forwarded-For headers are walked as one chain', () => {
  const trusted = compileTrustedProxies(['10.0.0.0/8']);
  const req = fakeReq('10.0.0.1', {
    'x-forwarded-for': ['6.6.6.6, 198.51.100.7', '10.1.1.1'],
  } as unknown as IncomingHttpHeaders);
  assert.equal(clientAddress(req, trusted), '198.51.100.7');
});

test('clientAddress: all hops trusted uses the leftmost hop', () => {
  const trusted = compileTrustedProxies(['10.0.0.0/8']);
  const req = fakeReq('10.0.0.1', { 'x-forwarded-for': '10.9.9.9, 10.1.1.1,10.2.2.2' });
  assert.equal(clientAddress(req, trusted), '10.9.9.9');
});

test('clientAddress: spoofed X-Forwarded-For from an untrusted peer is ignored', () => {
  const trusted = compileTrustedProxies(['10.0.0.0/8']);
  const req = fakeReq('203.0.113.50', { 'x-forwarded-for': '10.0.0.1, 198.51.100.1' });
  assert.equal(clientAddress(req, trusted), '203.0.113.50');
});

test('clientAddress: garbage hop ends the walk and is used truncated, marked invalid', () => {
  const trusted = compileTrustedProxies(['10.0.0.0/8']);
  const req = fakeReq('10.0.0.1', { 'x-forwarded-for': '198.51.100.1, not-an-ip, 10.1.1.1' });
  assert.equal(clientAddress(req, trusted), 'invalid:not-an-ip');
  const long = 'x'.repeat(500);
  const req2 = fakeReq('10.0.0.1', { 'x-forwarded-for': `${long}, 10.1.1.1` });
  assert.equal(clientAddress(req2, trusted), `invalid:${'x'.repeat(64)}`);
  // A forged hop spelled like a /64 key cannot share the lock of that real network.
  const req3 = fakeReq('10.0.0.1', { 'x-forwarded-for': '2001:db8:1:2::/64' });
  assert.notEqual(clientAddress(req3, trusted), clientAddress(fakeReq('2001:db8:1:2::5'), undefined));
});

test('clientAddress: IPv4-mapped peers and hops fold to IPv4', () => {
  const trusted = compileTrustedProxies(['127.0.0.1']);
  assert.equal(clientAddress(fakeReq('::ffff:203.0.113.5'), undefined), '203.0.113.5');
  const req = fakeReq('::ffff:127.0.0.1', { 'x-forwarded-for': '::FFFF:198.51.100.2' });
  assert.equal(clientAddress(req, trusted), '198.51.100.2');
});

test('clientAddress: IPv6 peers are grouped by /64', () => {
  assert.equal(clientAddress(fakeReq('2001:db8:1:2::1'), undefined), '2001:db8:1:2::/64');
  const trusted = compileTrustedProxies(['::1']);
  const req = fakeReq('::1', { 'x-forwarded-for': '2001:db8:1:2:aaaa:bbbb:cccc:dddd' });
  assert.equal(clientAddress(req, trusted), '2001:db8:1:2::/64');
});

test('addressKey: IPv4 unchanged', () => {
  assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
});

test('addressKey: IPv4-mapped IPv6 folding, any case and form', () => {
  assert.equal(addressKey('::ffff:1.2.3.4'), '1.2.3.4');
  assert.equal(addressKey('::FFFF:1.2.3.4'), '1.2.3.4');
  assert.equal(addressKey('::ffff:0102:0304'), '1.2.3.4');
  assert.equal(addressKey('0:0:0:0:0:ffff:1.2.3.4'), '1.2.3.4');
  assert.equal(addressKey('0:0:0:0:0:FFFF:c000:0201'), '192.0.2.1');
});

test('addressKey: IPv6 /64 grouping', () => {
  const a = addressKey('2001:db8:1:2:3:4:5:6');
  const b = addressKey('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff');
  assert.equal(a, '2001:db8:1:2::/64');
  assert.equal(a, b);
  assert.notEqual(addressKey('2001:db8:1:3::1'), a);
  assert.notEqual(addressKey('2001:db9:1:2::1'), a);
});

test('addressKey: :: compression', () => {
  assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(addressKey('2001:db8:0:0:1::'), '2001:db8:0:0::/64');
  assert.equal(addressKey('2001:db8::1'), addressKey('2001:0db8:0000:0000:ffff::'));
  assert.equal(addressKey('::1'), '0:0:0:0::/64');
  assert.equal(addressKey('::'), '0:0:0:0::/64');
  assert.equal(addressKey('1::'), '1:0:0:0::/64');
  assert.equal(addressKey('1:2:3::8'), '1:2:3:0::/64');
  assert.equal(addressKey('1:2:3:4:5::8'), '1:2:3:4::/64');
  assert.equal(addressKey('1::5:6:7:8'), '1:0:0:0::/64');
  assert.equal(addressKey('::2:3:4:5:6:7:8'), '0:2:3:4::/64');
  assert.equal(addressKey('64:ff9b::192.0.2.33'), '64:ff9b:0:0::/64');
});

test('addressKey: zone id is ignored', () => {
  assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(addressKey('fe80::1%eth0'), addressKey('fe80::abcd%2'));
  const trusted = compileTrustedProxies(['fe80::/10']);
  assert.ok(trusted);
  assert.equal(trusted.contains('fe80::1%eth0'), true);
  const req = fakeReq('fe80::1%eth0', { 'x-forwarded-for': '2001:db8:aa:bb::9%lo' });
  assert.equal(clientAddress(req, trusted), '2001:db8:aa:bb::/64');
});

test('addressKey: non-IP input is marked invalid and truncated to 64 characters', () => {
  assert.equal(addressKey('garbage'), 'invalid:garbage');
  assert.equal(addressKey('y'.repeat(100)), `invalid:${'y'.repeat(64)}`);
});

// ---------------------------------------------------------------------------
// limiter

const LIMITS: AuthRateLimit = { maxFailures: 5, windowSeconds: 60, lockoutSeconds: 30 };

function fakeClock(start = 1_700_000_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

test('limiter: maxFailures-1 failures do not lock, the maxFailures-th does', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  for (let i = 0; i < LIMITS.maxFailures - 1; i++) {
    assert.equal(limiter.recordFailure('1.2.3.4', LIMITS), 0);
    assert.equal(limiter.lockedFor('1.2.3.4'), 0);
  }
  assert.equal(limiter.recordFailure('1.2.3.4', LIMITS), LIMITS.lockoutSeconds);
  assert.equal(limiter.lockedFor('1.2.3.4'), LIMITS.lockoutSeconds);
});

test('limiter: lockedFor rounds up and decreases with the clock', () => {
  const clock = fakeClock();
  const limits = { maxFailures: 2, windowSeconds: 60, lockoutSeconds: 2.5 };
  const limiter = new AuthFailureLimiter({ now: clock.now });
  limiter.recordFailure('k', limits);
  assert.equal(limiter.recordFailure('k', limits), 3);
  assert.equal(limiter.lockedFor('k'), 3);
  clock.advance(600);
  assert.equal(limiter.lockedFor('k'), 2);
  clock.advance(1000);
  assert.equal(limiter.lockedFor('k'), 1);
  clock.advance(899);
  assert.equal(limiter.lockedFor('k'), 1);
  clock.advance(1);
  assert.equal(limiter.lockedFor('k'), 0);
});

test('limiter: lock expires and the count restarts afterwards', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  for (let i = 0; i < LIMITS.maxFailures; i++) limiter.recordFailure('a', LIMITS);
  assert.equal(limiter.lockedFor('a'), 30);
  clock.advance(29_999);
  assert.equal(limiter.lockedFor('a'), 1);
  // Failures during the lock neither count nor extend it.
  assert.equal(limiter.recordFailure('a', LIMITS), 0);
  clock.advance(1);
  assert.equal(limiter.lockedFor('a'), 0);
  for (let i = 0; i < LIMITS.maxFailures - 1; i++) assert.equal(limiter.recordFailure('a', LIMITS), 0);
  assert.equal(limiter.lockedFor('a'), 0);
  assert.equal(limiter.recordFailure('a', LIMITS), 30);
});

test('limiter: failures older than the window stop counting', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  for (let i = 0; i < LIMITS.maxFailures - 1; i++) limiter.recordFailure('w', LIMITS);
  clock.advance(60_000);
  assert.equal(limiter.recordFailure('w', LIMITS), 0);
  assert.equal(limiter.lockedFor('w'), 0);
  // That failure opened a new window: maxFailures - 2 more still do not lock...
  for (let i = 0; i < LIMITS.maxFailures - 2; i++) assert.equal(limiter.recordFailure('w', LIMITS), 0);
  // ...and the maxFailures-th within it does.
  assert.equal(limiter.recordFailure('w', LIMITS), 30);
});

test('limiter: expired entries are dropped lazily on lookup', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  limiter.recordFailure('x', LIMITS);
  assert.equal(limiter.size, 1);
  clock.advance(59_999);
  assert.equal(limiter.lockedFor('x'), 0);
  assert.equal(limiter.size, 1);
  clock.advance(1);
  assert.equal(limiter.lockedFor('x'), 0);
  assert.equal(limiter.size, 0);
});

test('limiter: limits may change between calls (hot reload)', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  for (let i = 0; i < 3; i++) limiter.recordFailure('h', LIMITS);
  assert.equal(limiter.recordFailure('h', { ...LIMITS, maxFailures: 4, lockoutSeconds: 10 }), 10);
  assert.equal(limiter.lockedFor('h'), 10);
});

test('limiter: addresses are isolated', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  for (let i = 0; i < LIMITS.maxFailures; i++) limiter.recordFailure('1.1.1.1', LIMITS);
  for (let i = 0; i < LIMITS.maxFailures - 1; i++) limiter.recordFailure('2.2.2.2', LIMITS);
  assert.equal(limiter.lockedFor('1.1.1.1'), 30);
  assert.equal(limiter.lockedFor('2.2.2.2'), 0);
  assert.equal(limiter.lockedFor('3.3.3.3'), 0);
  assert.equal(limiter.size, 2);
});

test('limiter: at capacity, expired entries are evicted before live ones', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ maxEntries: 3, now: clock.now });
  const limits = { maxFailures: 2, windowSeconds: 10, lockoutSeconds: 100 };
  limiter.recordFailure('locked', limits);
  limiter.recordFailure('locked', limits); // locked for 100 s, head of the map
  limiter.recordFailure('stale', limits);
  clock.advance(5_000);
  limiter.recordFailure('fresh', limits);
  clock.advance(6_000); // 'stale' window over, 'fresh' still open
  limiter.recordFailure('new', limits);
  assert.equal(limiter.size, 3);
  assert.equal(limiter.lockedFor('locked'), 89);
  assert.equal(limiter.recordFailure('fresh', limits), 100); // still had its count
});

test('limiter: at capacity with nothing expired, the least recently failing entry goes', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ maxEntries: 2, now: clock.now });
  const limits = { maxFailures: 2, windowSeconds: 60, lockoutSeconds: 60 };
  limiter.recordFailure('a', limits);
  limiter.recordFailure('b', limits);
  limiter.recordFailure('a', limits); // a locks and becomes most recent
  limiter.recordFailure('c', limits); // evicts b
  assert.equal(limiter.size, 2);
  assert.equal(limiter.lockedFor('a'), 60);
  assert.equal(limiter.recordFailure('c', limits), 60);
  assert.equal(limiter.recordFailure('b', limits), 0); // b starts over
});

function getGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

test('limiter: memory stays bounded under 1,000,000 distinct failing addresses', () => {
  const gc = getGc();
  const clock = fakeClock();
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const limiter = new AuthFailureLimiter({ now: clock.now });
  const limits = { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60 };
  const started = process.cpuUsage(); // CPU time: what other work on the machine does not inflate
  let maxSize = 0;
  for (let i = 0; i < 1_000_000; i++) {
    const key = `${(i >>> 16) & 0xff}.${(i >>> 8) & 0xff}.${i & 0xff}.7`;
    limiter.recordFailure(key, limits);
    if ((i & 0x3ff) === 0) {
      clock.advance(1); // time moves, but no entry expires within the run
      if (limiter.size > maxSize) maxSize = limiter.size;
    }
  }
  const cpu = process.cpuUsage(started);
  const elapsed = (cpu.user + cpu.system) / 1000;
  maxSize = Math.max(maxSize, limiter.size);
  assert.ok(maxSize <= 65536, `size ${maxSize}`);
  assert.equal(limiter.size, 65536);
  // The most recent addresses survive; the oldest were evicted.
  assert.equal(limiter.recordFailure('0.0.0.7', { ...limits, maxFailures: 2 }), 0);
  if (gc) {
    gc();
    const growth = process.memoryUsage().heapUsed - before;
    // ~65k small entries plus keys and the Map: a few MB. Unbounded growth
    // for 1M entries would be well over 100 MB.
    assert.ok(growth < 32 * 1024 * 1024, `heap grew by ${(growth / 1048576).toFixed(1)} MB`);
  }
  assert.ok(elapsed < 5000, `took ${elapsed.toFixed(0)} ms of CPU`);
  // Keep the limiter alive until after the measurement.
  assert.ok(limiter.size > 0);
});

test('limiter: an address keeps fingerprints of a few credentials only; failures past them count but are never forgiven', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  const limits = { maxFailures: 1000, windowSeconds: 60, lockoutSeconds: 30 };
  for (let i = 0; i < 500; i++) limiter.recordFailure('k', limits, `token\0guess-${i}`);
  limiter.recordFailure('k', limits, `token\0guess-0`);
  // guess-0 was kept (2 failures), guess-499 was not: forgiving both takes 2 off the 501.
  limiter.rotate([`token\0guess-0`, `token\0guess-499`], [], limits);
  for (let i = 0; i < 500; i++) assert.equal(limiter.recordFailure('k', limits), 0, `failure ${502 + i}`);
  assert.equal(limiter.recordFailure('k', limits), 30, 'the 1000th counted failure locks');
});

test('limiter: retired credentials are remembered for the grace period only', () => {
  const clock = fakeClock();
  const limiter = new AuthFailureLimiter({ now: clock.now });
  const limits = { maxFailures: 2, windowSeconds: 600, lockoutSeconds: 30, rotationGraceSeconds: 10 };
  limiter.rotate([`token\0new`], [`token\0old`], limits);
  for (let i = 0; i < 10; i++) assert.equal(limiter.recordFailure('k', limits, `token\0old`), 0);
  assert.equal(limiter.lastCounted, false);
  clock.advance(10_000);
  assert.equal(limiter.recordFailure('k', limits, `token\0old`), 0);
  assert.equal(limiter.lastCounted, true);
  assert.equal(limiter.recordFailure('k', limits, `token\0old`), 30);
});
