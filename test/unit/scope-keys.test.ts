// One scope's kept keys, packed in a ring: the order they were added in survives growing, emptied
// places and shrinking; each key's answer and hash read back as kept; equal answers are one object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScopeKeys } from '../../plugin/dedupe/scope-keys.ts';
import { bodyHashOf } from '../../plugin/dedupe/body-hash.ts';

const answer = (at: number, body?: Record<string, unknown>) => (body ? { at, status: 200, body } : { at, status: 204 });

/** Every key, oldest first, by taking them all out. */
function drain(keys: ScopeKeys): number[] {
  const times: number[] = [];
  for (let at = keys.oldestAt(); at !== undefined; at = keys.oldestAt()) {
    times.push(at);
    keys.removeOldest();
  }
  return times;
}

test('the oldest goes first, across growing, keys added again and keys deleted', () => {
  const keys = new ScopeKeys('wake');
  for (let i = 0; i < 100; i++) keys.add(`k${i}`, answer(i), undefined);
  // Taken out and added past the ring's end, so the ring wraps before it grows again.
  for (let i = 0; i < 10; i++) keys.removeOldest();
  for (let i = 100; i < 3000; i++) keys.add(`k${i}`, answer(i), undefined);
  keys.add('k50', answer(5000), undefined); // added again: now the newest
  keys.delete('k60');
  keys.delete('absent');
  assert.equal(keys.size, 2989);
  const expected = [];
  for (let i = 10; i < 3000; i++) if (i !== 50 && i !== 60) expected.push(i);
  expected.push(5000);
  assert.deepEqual(drain(keys), expected);
  assert.equal(keys.size, 0);
  assert.equal(keys.oldestAt(), undefined);
});

test('a ring emptied to a quarter shrinks and keeps every key, its answer, hash and order', () => {
  const keys = new ScopeKeys('wake');
  const hash = bodyHashOf(Buffer.from('{"text":"x"}'));
  for (let i = 0; i < 8192; i++) keys.add(`k${i}`, answer(i, { ok: true, n: i % 3 }), i % 2 ? hash : undefined);
  for (let i = 0; i < 8000; i++) keys.delete(`k${i}`);
  assert.equal(keys.size, 192);
  const place = keys.placeOf('k8001')!;
  assert.deepEqual(keys.answer(place), { at: 8001, status: 200, body: { ok: true, n: 8001 % 3 } });
  assert.deepEqual(keys.hashAt(place), { hi: hash.hi, lo: hash.lo });
  assert.deepEqual(keys.hashAt(keys.placeOf('k8000')!), { hi: undefined, lo: undefined });
  assert.equal(keys.placeOf('k7999'), undefined);
  assert.deepEqual(
    drain(keys),
    Array.from({ length: 192 }, (_, i) => 8000 + i),
  );
});

test('equal answers are one frozen object; an amended answer replaces its own key only', () => {
  const keys = new ScopeKeys('wake');
  keys.add('a', answer(1, { ok: true, mode: 'now', count: 1 }), undefined);
  keys.add('b', answer(2, { ok: true, mode: 'now', count: 1 }), undefined);
  keys.add('c', answer(3), undefined);
  const a = keys.answer(keys.placeOf('a')!);
  const b = keys.answer(keys.placeOf('b')!);
  assert.equal(a.body, b.body);
  assert.ok(Object.isFrozen(a.body));
  assert.deepEqual(keys.answer(keys.placeOf('c')!), { at: 3, status: 204 });
  keys.amend(keys.placeOf('a')!, answer(1, { ok: true, status: 'ok' }));
  assert.deepEqual(keys.answer(keys.placeOf('a')!).body, { ok: true, status: 'ok' });
  assert.deepEqual(keys.answer(keys.placeOf('b')!).body, { ok: true, mode: 'now', count: 1 });
});
