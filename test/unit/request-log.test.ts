// The request ring and what of a sender's key it keeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LOGGED_KEY_MAX, loggableKey, RequestLog, type LoggedRequest } from '../../plugin/observe/request-log.ts';

const entry = (n: number): LoggedRequest => ({
  atMs: n,
  requestId: `r${n}`,
  client: '127.0.0.1',
  path: '/hooks/wake',
  status: 200,
  ms: 1,
  bytes: 2,
});

test('the ring keeps the newest entries, oldest first, and latest(n) gives the newest n', () => {
  const log = new RequestLog(3);
  assert.deepEqual(log.latest(), []);
  for (let n = 1; n <= 5; n++) log.add(entry(n));
  assert.deepEqual(
    log.latest().map((e) => e.requestId),
    ['r3', 'r4', 'r5'],
  );
  assert.deepEqual(
    log.latest(2).map((e) => e.requestId),
    ['r4', 'r5'],
  );
  assert.deepEqual(log.latest(0), []);
  assert.equal(log.latest(1)[0]!.at, new Date(5).toISOString());
});

test('the default ring holds 1000', () => {
  const log = new RequestLog();
  for (let n = 0; n < 1500; n++) log.add(entry(n));
  const all = log.latest(5000);
  assert.equal(all.length, 1000);
  assert.equal(all[0]!.requestId, 'r500');
  assert.equal(all.at(-1)!.requestId, 'r1499');
});

test('a sender-chosen key loses its control characters and is capped', () => {
  assert.equal(loggableKey('a\u0000b\u001b[31mc\u007f\u2028d'), 'ab[31mcd');
  const long = loggableKey('x'.repeat(500));
  assert.equal(long, `${'x'.repeat(LOGGED_KEY_MAX)}…`);
  assert.equal(loggableKey('delivery-42'), 'delivery-42');
});
