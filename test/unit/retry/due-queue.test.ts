import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DueQueue } from '../../../plugin/retry/due-queue.ts';

function until(check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const poll = (): void => (check() ? resolve() : void setImmediate(poll));
    poll();
  });
}

test('items fall due in time order, whatever order they were added in', async () => {
  const seen: string[] = [];
  const q = new DueQueue<string>((item) => seen.push(item));
  const now = Date.now();
  q.add('c', now + 30, 'c');
  q.add('a', now + 10, 'a');
  q.add('b', now + 20, 'b');
  q.add('z', now - 5, 'z');
  await until(() => seen.length === 4);
  assert.deepEqual(seen, ['z', 'a', 'b', 'c']);
  assert.equal(q.size, 0);
  q.close();
});

test('a removed item never falls due; a re-added id moves to its new time', async () => {
  const seen: string[] = [];
  const q = new DueQueue<string>((item) => seen.push(item));
  const now = Date.now();
  q.add('gone', now + 5, 'gone');
  q.add('moved', now + 5, 'moved-early');
  q.add('moved', now + 15, 'moved-late');
  q.add('last', now + 25, 'last');
  assert.equal(q.remove('gone'), true);
  assert.equal(q.remove('gone'), false);
  assert.equal(q.size, 2);
  await until(() => seen.length === 2);
  assert.deepEqual(seen, ['moved-late', 'last']);
  q.close();
});

test('ten thousand waiting items hold one timer, and nothing fires after close', async () => {
  let fired = 0;
  const q = new DueQueue<number>(() => fired++);
  const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const base = Date.now() + 3_600_000;
  for (let i = 0; i < 10_000; i++) q.add(String(i), base + i, i);
  const during = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  assert.ok(during - before <= 1, `timers added: ${during - before}`);
  q.add('now', Date.now(), -1);
  await until(() => fired === 1);
  q.close();
  q.add('after', Date.now(), -2);
  await new Promise((r) => setImmediate(r));
  assert.equal(fired, 1);
  assert.equal(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length, before);
});

test('items due at the same time fall due in the order they were added', async () => {
  const seen: number[] = [];
  const q = new DueQueue<number>((item) => seen.push(item));
  const at = Date.now() + 5;
  for (let i = 0; i < 50; i++) q.add(String(i), at, i);
  await until(() => seen.length === 50);
  assert.deepEqual(
    seen,
    Array.from({ length: 50 }, (_, i) => i),
  );
  q.close();
});
