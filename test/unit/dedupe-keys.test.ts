// The in-memory side of exactly-once: keys within the window, at most maxKeys (oldest out first),
// requests under way that duplicates wait for, and keys handed back by the host on start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DedupeKeys, duplicateOf } from '../../plugin/dedupe/dedupe-keys.ts';
import { derivedKey, idempotencyKeyHeader } from '../../plugin/dedupe/idempotency.ts';
import type { IdempotencyRecord } from '../../plugin/host.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A full collection on demand, for the memory test.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const record = (key: string, at: number, scope = 'wake'): IdempotencyRecord => ({
  scope,
  key,
  at,
  status: 200,
  body: { ok: true, mode: 'now' },
});

test('a settled key answers its first answer, marked; another scope does not see it', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }));
  assert.equal(keys.seen('wake', 'k'), undefined);
  keys.claim('wake', 'k').settle(record('k', Date.now()));
  const seen = keys.seen('wake', 'k');
  assert.ok(seen && 'answer' in seen);
  assert.deepEqual(duplicateOf(seen.answer), { status: 200, body: { ok: true, mode: 'now', duplicate: true } });
  // One object per key holds the key and its answer: not the host's record, which may carry more.
  assert.deepEqual(Object.keys(seen.answer).sort(), ['at', 'body', 'key', 'scope', 'status']);
  assert.equal(keys.seen('agent', 'k'), undefined);
  assert.deepEqual(duplicateOf({ at: 0, status: 204 }), { status: 204 });
});

test('a duplicate of a request under way waits for it; a failed first keeps nothing', async () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }));
  const first = keys.claim('agent', 'k');
  const waiting = keys.seen('agent', 'k');
  assert.ok(waiting && 'pending' in waiting);
  first.release(new Error('run queue full'));
  await assert.rejects(waiting.pending, /run queue full/);
  assert.equal(keys.seen('agent', 'k'), undefined, 'the retry is processed');
  const second = keys.claim('agent', 'k');
  const again = keys.seen('agent', 'k');
  assert.ok(again && 'pending' in again);
  second.settle(record('k', Date.now(), 'agent'));
  assert.equal((await again.pending).status, 200);
});

test('past maxKeys the oldest key goes first; past the window a key is new again', () => {
  let now = 1_000_000;
  const keys = new DedupeKeys(
    () => ({ windowMs: 10_000, maxKeys: 3 }),
    () => now,
  );
  for (const k of ['a', 'b', 'c', 'd']) keys.claim('wake', k).settle(record(k, now++));
  assert.equal(keys.size, 3);
  assert.equal(keys.seen('wake', 'a'), undefined);
  assert.ok(keys.seen('wake', 'b'));
  now += 10_001;
  assert.equal(keys.seen('wake', 'b'), undefined);
  keys.claim('wake', 'e').settle(record('e', now));
  assert.equal(keys.size, 1, 'expired keys are dropped as new ones come');
});

test('restore takes the keys within the window, oldest first, bounded by maxKeys', () => {
  const now = Date.now();
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 2 }));
  keys.restore([
    record('old', now - 120_000),
    record('x', now - 3000),
    record('y', now - 2000),
    record('z', now - 1000),
  ]);
  assert.equal(keys.size, 2);
  assert.equal(keys.seen('wake', 'old'), undefined);
  assert.equal(keys.seen('wake', 'x'), undefined);
  assert.ok(keys.seen('wake', 'z'));
});

test('Idempotency-Key: 1 to 256 printable ASCII characters, else 400 invalid_idempotency_key', () => {
  assert.equal(idempotencyKeyHeader({}), undefined);
  assert.equal(idempotencyKeyHeader({ 'idempotency-key': 'a'.repeat(256) }), 'a'.repeat(256));
  for (const bad of ['', 'a'.repeat(257), 'tab\there', 'é']) {
    assert.throws(
      () => idempotencyKeyHeader({ 'idempotency-key': bad }),
      (err: any) => err.status === 400 && err.code === 'invalid_idempotency_key',
      JSON.stringify(bad),
    );
  }
  assert.equal(derivedKey('  '), undefined);
  assert.match(derivedKey('x'.repeat(300))!, /^sha256:[0-9a-f]{64}$/);
});

test('100,000 keys stay within maxKeys and are found in constant time each', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 100_000 }));
  const now = Date.now();
  for (let i = 0; i < 150_000; i++) keys.claim('wake', `k${i}`).settle(record(`k${i}`, now));
  assert.equal(keys.size, 100_000);
  assert.equal(keys.seen('wake', 'k49999'), undefined);
  assert.ok(keys.seen('wake', 'k50000'));
});

test('a key in memory costs little: no promise unless a duplicate waits, and evicted answers are let go', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 3_600_000, maxKeys: 50_000 }));
  const now = Date.now();
  const body = Object.freeze({ ok: true, mode: 'now' });
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 150_000; i++) keys.claim('wake', `key-${i}`).settle({ at: now, status: 200, body });
  gc();
  const perKey = (process.memoryUsage().heapUsed - before) / keys.size;
  assert.equal(keys.size, 50_000);
  // A loose bound: the key string, its map entry and a small answer, not a promise and closures.
  assert.ok(perKey < 400, `${perKey.toFixed(0)} bytes per key`);
});
