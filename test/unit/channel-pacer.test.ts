// The pacer: queued sends wait for their turn (never refused), one recipient sends one at a time in
// order, a shared limit holds across recipients, and a whole queue costs one timer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Pacer, PacerClosedError } from '../../channels/pacer.ts';

const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('a queue of many sends holds one timer, and they go in order', async () => {
  const pacer = new Pacer({ recipient: () => [{ count: 1, perMs: 5 }], all: [] });
  const before = timers();
  const order: number[] = [];
  const sends = Array.from({ length: 200 }, (_, i) =>
    pacer.turn('chat').then((release) => {
      order.push(i);
      release();
    }),
  );
  assert.equal(pacer.waiting, 199);
  assert.ok(timers() - before <= 1, `${timers() - before} timers for 200 queued sends`);
  await Promise.all(sends);
  assert.deepEqual(
    order,
    Array.from({ length: 200 }, (_, i) => i),
  );
  assert.equal(pacer.waiting, 0);
});

test('the limit shared by all recipients holds for arrivals: at most count in any window', async () => {
  const pacer = new Pacer({ recipient: () => [], all: [{ count: 3, perMs: 60 }] });
  const arrivals: number[] = [];
  await Promise.all(
    Array.from({ length: 15 }, async (_, i) => {
      const release = await pacer.turn(`chat${i % 5}`);
      // The platform receives the request some time after the turn, before the answer.
      await new Promise((r) => setTimeout(r, i % 4));
      arrivals.push(performance.now());
      await new Promise((r) => setTimeout(r, 1));
      release();
    }),
  );
  arrivals.sort((a, b) => a - b);
  for (let i = 3; i < arrivals.length; i++) assert.ok(arrivals[i]! - arrivals[i - 3]! >= 59, `arrival ${i}`);
});

test('an announced wait holds the recipient; closing refuses what still waits', async () => {
  const pacer = new Pacer({ recipient: () => [], all: [] });
  const first = await pacer.turn('a');
  const heldAt = Date.now();
  first({ ms: 80, scope: 'recipient' });
  const other = await pacer.turn('b');
  assert.ok(Date.now() - heldAt < 80, 'another recipient is not held');
  other();
  await pacer.turn('a').then((release) => {
    assert.ok(Date.now() >= heldAt + 80);
    release();
  });
  const busy = await pacer.turn('c');
  const waiting = pacer.turn('c');
  pacer.close();
  await assert.rejects(waiting, PacerClosedError);
  busy();
});

test('a hold past the longest timer (25 days) sets no overflowing timer: no warning, nothing spins', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => void warnings.push(w.name);
  process.on('warning', onWarning);
  const pacer = new Pacer({ recipient: () => [], all: [] });
  try {
    const first = await pacer.turn('a');
    first({ ms: 25 * 24 * 3600 * 1000, scope: 'channel' });
    const held = pacer.turn('a');
    held.catch(() => {});
    // Warnings are emitted on a later tick: a few turns of the loop show them if there are any.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings, []);
    assert.equal(pacer.waiting, 1, 'still held');
  } finally {
    pacer.close();
    process.off('warning', onWarning);
  }
});
