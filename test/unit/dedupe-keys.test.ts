// The in-memory side of exactly-once: keys within the window, at most maxKeys shared fairly between
// scopes (oldest out first), requests under way that duplicates wait for, the body's hash beside each
// key, and keys handed back by the host on start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DedupeKeys, duplicateOf } from '../../plugin/dedupe/dedupe-keys.ts';
import { bodyHashOf } from '../../plugin/dedupe/body-hash.ts';
import { keepFairly } from '../../plugin/dedupe/fair-share.ts';
import { derivedKey, idempotencyKeyHeader } from '../../plugin/request/idempotency.ts';
import type { IdempotencyRecord, LogFields, Logger } from '../../plugin/host.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A full collection on demand, for the memory test.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A logger that keeps its lines. */
function lines(): Logger & { warned: { msg: string; fields?: LogFields }[] } {
  const warned: { msg: string; fields?: LogFields }[] = [];
  return { warned, info: () => {}, warn: (msg, fields) => void warned.push({ msg, fields }), error: () => {} };
}
const quiet = lines();

const record = (key: string, at: number, scope = 'wake'): IdempotencyRecord => ({
  scope,
  key,
  at,
  status: 200,
  body: { ok: true, mode: 'now' },
});

test('a settled key answers its first answer, marked; another scope does not see it', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }), quiet);
  assert.equal(keys.seen('wake', 'k'), undefined);
  keys.claim('wake', 'k').settle(record('k', Date.now()));
  const seen = keys.seen('wake', 'k');
  assert.ok(seen && 'answer' in seen);
  assert.deepEqual(duplicateOf(seen.answer), { status: 200, body: { ok: true, mode: 'now', duplicate: true } });
  // The answer as kept: not the host's record, which may carry more.
  assert.deepEqual(Object.keys(seen.answer).sort(), ['at', 'body', 'status']);
  assert.equal(keys.seen('agent', 'k'), undefined);
  assert.deepEqual(duplicateOf({ at: 0, status: 204 }), { status: 204 });
});

test("a duplicate's marked body is made once per kept answer, and an amended answer gets its own", () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }), quiet);
  const at = Date.now();
  const claim = keys.claim('agent', 'k');
  claim.settle({ at, status: 202, body: { ok: true, runId: 'r1' } });
  const first = keys.seen('agent', 'k');
  assert.ok(first && 'answer' in first);
  const marked = duplicateOf(first.answer).body!;
  // The same frozen object every time: the answer writer keeps its text (answers.ts).
  assert.equal(duplicateOf(first.answer).body, marked);
  assert.ok(Object.isFrozen(marked));
  assert.deepEqual(marked, { ok: true, runId: 'r1', duplicate: true });
  // A waited run's final outcome replaces the kept answer: duplicates get it, not the 202 made before.
  claim.amend({ at, status: 200, body: { ok: true, runId: 'r1', status: 'ok' } });
  const later = keys.seen('agent', 'k');
  assert.ok(later && 'answer' in later);
  assert.deepEqual(duplicateOf(later.answer), {
    status: 200,
    body: { ok: true, runId: 'r1', status: 'ok', duplicate: true },
  });
});

test('a duplicate of a request under way waits for it; a failed first keeps nothing', async () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }), quiet);
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
    quiet,
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
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 2 }), quiet);
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
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 100_000 }), quiet);
  const now = Date.now();
  for (let i = 0; i < 150_000; i++) keys.claim('wake', `k${i}`).settle(record(`k${i}`, now));
  assert.equal(keys.size, 100_000);
  assert.equal(keys.seen('wake', 'k49999'), undefined);
  assert.ok(keys.seen('wake', 'k50000'));
});

test('a key in memory costs little: no promise unless a duplicate waits, and evicted answers are let go', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 3_600_000, maxKeys: 50_000 }), quiet);
  const now = Date.now();
  gc();
  const before = process.memoryUsage().heapUsed;
  const hash = bodyHashOf(Buffer.from('{"text":"x"}'));
  // Each request's answer is an object of its own, as in the gateway.
  for (let i = 0; i < 150_000; i++)
    keys.claim('wake', `key-${i}`, hash).settle({ at: now, status: 200, body: { ok: true, mode: 'now' } });
  gc();
  const perKey = (process.memoryUsage().heapUsed - before) / keys.size;
  assert.equal(keys.size, 50_000);
  // The key string, its map entry and its packed place; equal answers shared. Not a promise and
  // closures, nor an object per key (about 300 bytes a key with one, its time boxed).
  assert.ok(perKey < 180, `${perKey.toFixed(0)} bytes per key`);
});

test("a scope flooding fresh keys evicts its own oldest; another scope's keys within its share stay", () => {
  const log = lines();
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }), log);
  const now = Date.now();
  for (const k of ['r1', 'r2', 'r3']) keys.claim('agent', k).settle(record(k, now, 'agent'));
  for (let i = 0; i < 100; i++) keys.claim('mapping:flood', `f${i}`).settle(record(`f${i}`, now, 'mapping:flood'));
  assert.equal(keys.size, 10);
  for (const k of ['r1', 'r2', 'r3']) assert.ok(keys.seen('agent', k), k);
  assert.equal(keys.seen('mapping:flood', 'f92'), undefined);
  assert.ok(keys.seen('mapping:flood', 'f93'), 'the flood keeps its newest keys in the room left');
  // 93 early evictions, one line (at most one a minute per scope), naming the scope and no key.
  assert.equal(log.warned.length, 1);
  assert.match(log.warned[0]!.msg, /evicted before their window ended/);
  assert.deepEqual(log.warned[0]!.fields, { scope: 'mapping:flood', kept: 7, count: 1 });
});

test('a full store: a scope under its share takes room from the largest scope, never below that share', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 9 }), quiet);
  const now = Date.now();
  for (let i = 0; i < 9; i++) keys.claim('wake', `w${i}`).settle(record(`w${i}`, now));
  for (let i = 0; i < 3; i++) keys.claim('agent', `a${i}`).settle(record(`a${i}`, now, 'agent'));
  assert.equal(keys.size, 9);
  assert.equal(keys.seen('wake', 'w2'), undefined, "the largest scope's oldest went");
  assert.ok(keys.seen('wake', 'w3'));
  // A third scope: shares of 3; the largest (wake, 6) gives way until it is down to the others.
  for (let i = 0; i < 5; i++) keys.claim('mapping:m', `m${i}`).settle(record(`m${i}`, now, 'mapping:m'));
  for (let i = 0; i < 3; i++) assert.ok(keys.seen('agent', `a${i}`), `a${i}`);
  for (const k of ['w6', 'w7', 'w8']) assert.ok(keys.seen('wake', k), k);
  assert.equal(keys.size, 9);
});

test("expired keys of a quiet scope make room before a flooding scope's own fresh keys go", () => {
  let now = 1_000_000;
  const log = lines();
  const keys = new DedupeKeys(
    () => ({ windowMs: 10_000, maxKeys: 10 }),
    log,
    () => now,
  );
  for (let i = 0; i < 8; i++) keys.claim('wake', `old${i}`).settle(record(`old${i}`, now));
  now += 20_000;
  for (let i = 0; i < 10; i++) keys.claim('agent', `new${i}`).settle(record(`new${i}`, now, 'agent'));
  assert.ok(keys.seen('agent', 'new0'), 'no fresh key went while expired ones were there');
  assert.equal(log.warned.length, 0);
});

test('the body hash beside a key: the same body is a duplicate, another is reused, in flight and after', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }), quiet);
  const a = bodyHashOf(Buffer.from('{"text":"a"}'));
  const b = bodyHashOf(Buffer.from('{"text":"b"}'));
  assert.match(a.hex, /^[0-9a-f]{16}$/);
  const first = keys.claim('wake', 'k', a);
  assert.ok('pending' in keys.seen('wake', 'k', a)!);
  assert.deepEqual(keys.seen('wake', 'k', b), { reused: true });
  first.settle(record('k', Date.now()));
  assert.ok('answer' in keys.seen('wake', 'k', a)!);
  assert.deepEqual(keys.seen('wake', 'k', b), { reused: true });
  // Without a hash on either side (a forEach item's key; a key kept by an older version) nothing differs.
  assert.ok('answer' in keys.seen('wake', 'k')!);
  keys.claim('wake', 'unhashed').settle(record('unhashed', Date.now()));
  assert.ok('answer' in keys.seen('wake', 'unhashed', b)!);
});

test('restore keeps the hash: a restarted store still refuses another body', () => {
  const keys = new DedupeKeys(() => ({ windowMs: 60_000, maxKeys: 10 }), quiet);
  const a = bodyHashOf(Buffer.from('first'));
  const b = bodyHashOf(Buffer.from('second'));
  keys.restore([
    { ...record('k', Date.now()), bodyHash: a.hex },
    { ...record('odd', Date.now()), bodyHash: 'nothex' },
  ]);
  assert.ok('answer' in keys.seen('wake', 'k', a)!);
  assert.deepEqual(keys.seen('wake', 'k', b), { reused: true });
  assert.ok('answer' in keys.seen('wake', 'odd', b)!, 'an unreadable hash is no hash');
});

test('keepFairly: each scope keeps its newest keys up to an equal level; scopes needing less leave room', () => {
  const r = (scope: string, n: number) => Array.from({ length: n }, (_, i) => ({ scope, key: `${scope}${i}` }));
  const all = [...r('a', 2), ...r('flood', 50), ...r('b', 6)];
  const kept = keepFairly(all, 12);
  const of = (scope: string) => kept.filter((k) => k.scope === scope).map((k) => k.key);
  assert.deepEqual(of('a'), ['a0', 'a1']);
  assert.deepEqual(of('b'), ['b1', 'b2', 'b3', 'b4', 'b5']);
  assert.deepEqual(of('flood'), ['flood45', 'flood46', 'flood47', 'flood48', 'flood49']);
  assert.deepEqual(
    kept.map((k) => k.key),
    all.filter((k) => kept.includes(k)).map((k) => k.key),
    'in their order',
  );
  assert.equal(keepFairly(all, 100).length, all.length);
});
