// The rate limit per hook on a clock the test moves: a sliding window that never admits more than
// `requests` in any span of `perSeconds`, refusals that do not count, a Retry-After that is exact,
// per-client counts, and bounded memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileRateLimit, HookRateLimiter } from '../../plugin/auth/hook-rate-limit.ts';

test('the window slides: the oldest admissions leave it, refusals never enter it', () => {
  let now = 1_000_000;
  const limiter = new HookRateLimiter({ now: () => now });
  const limit = compileRateLimit('hook:x', { requests: 3, perSeconds: 10 });
  for (let i = 0; i < 3; i++) assert.equal(limiter.admit(limit, 'c'), 0);
  now += 5000;
  const wait = limiter.admit(limit, 'c');
  assert.ok(wait >= 5 && wait <= 6, `retry in ${wait} s`);
  for (let i = 0; i < 100; i++) limiter.admit(limit, 'c');
  assert.equal(limiter.counted(limit), 3, 'refusals are not counted');
  now = 1_000_000 + 9999;
  assert.ok(limiter.admit(limit, 'c') > 0, 'still inside the window');
  now = 1_000_000 + 11_000;
  assert.equal(limiter.admit(limit, 'c'), 0, 'a whole window and its bucket later: admitted');
});

test('property: no span of perSeconds ever holds more than `requests` admissions', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 1, max: 30 }),
      fc.array(fc.integer({ min: 0, max: 2000 }), { minLength: 1, maxLength: 200 }),
      (requests, perSeconds, gaps) => {
        let now = 5_000_000;
        const limiter = new HookRateLimiter({ now: () => now });
        const limit = compileRateLimit('hook:p', { requests, perSeconds });
        const admitted: number[] = [];
        for (const gap of gaps) {
          now += gap * 10;
          const wait = limiter.admit(limit, '');
          if (wait === 0) admitted.push(now);
          else assert.ok(wait >= 1 && wait <= Math.ceil(perSeconds * 1.1), `retry in ${wait} s`);
        }
        for (let i = 0; i + requests < admitted.length; i++) {
          assert.ok(admitted[i + requests]! - admitted[i]! >= perSeconds * 1000, 'more than allowed in one window');
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('Retry-After is exact enough: at now + Retry-After the next request is admitted', () => {
  let now = 7_777_777;
  const limiter = new HookRateLimiter({ now: () => now });
  const limit = compileRateLimit('hook:r', { requests: 2, perSeconds: 3 });
  limiter.admit(limit, '');
  now += 1200;
  limiter.admit(limit, '');
  now += 300;
  const wait = limiter.admit(limit, '');
  assert.ok(wait > 0);
  now += wait * 1000;
  assert.equal(limiter.admit(limit, ''), 0);
});

test('perClient counts each client apart; memory stays bounded', () => {
  let now = 0;
  const limiter = new HookRateLimiter({ now: () => now, maxKeys: 100 });
  const limit = compileRateLimit('hook:c', { requests: 1, perSeconds: 60, perClient: true });
  assert.equal(limiter.admit(limit, 'a'), 0);
  assert.ok(limiter.admit(limit, 'a') > 0);
  assert.equal(limiter.admit(limit, 'b'), 0);
  for (let i = 0; i < 1000; i++) limiter.admit(limit, `client-${i}`);
  assert.ok(limiter.size <= 100, `${limiter.size} keys`);
  now += 120_000;
  for (let i = 0; i < 10; i++) limiter.admit(limit, `later-${i}`);
  assert.ok(limiter.size <= 100);
});
