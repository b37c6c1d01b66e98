import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mayRetry, retryDelayMs } from '../../../plugin/retry/retry-policy.ts';

const policy = { attempts: 5, initialDelaySeconds: 10, maxDelaySeconds: 3600 };

test('attempts count every try, the first included', () => {
  assert.equal(mayRetry(policy, 1), true);
  assert.equal(mayRetry(policy, 4), true);
  assert.equal(mayRetry(policy, 5), false);
  assert.equal(mayRetry({ ...policy, attempts: 1 }, 1), false);
});

test('waits double from the initial delay, drawn from the upper half of each step', () => {
  for (const [tries, full] of [
    [1, 10_000],
    [2, 20_000],
    [3, 40_000],
    [4, 80_000],
  ] as const) {
    assert.equal(
      retryDelayMs(policy, tries, undefined, () => 0),
      full / 2,
    );
    assert.equal(
      retryDelayMs(policy, tries, undefined, () => 1),
      full,
    );
  }
});

test('waits are capped at maxDelaySeconds however many tries came before', () => {
  assert.equal(
    retryDelayMs(policy, 30, undefined, () => 1),
    3_600_000,
  );
  assert.equal(
    retryDelayMs(policy, 10_000, undefined, () => 1),
    3_600_000,
  );
});

test("a downstream's announced wait wins when it is longer, never when shorter", () => {
  assert.equal(
    retryDelayMs(policy, 1, 90_000, () => 1),
    90_000,
  );
  assert.equal(
    retryDelayMs(policy, 1, 2_000, () => 1),
    10_000,
  );
  assert.equal(
    retryDelayMs(policy, 1, Number.NaN, () => 1),
    10_000,
  );
});

test('an announced wait is honoured up to maxDelaySeconds: days, Infinity and times past the dates wait the cap', () => {
  const cap = policy.maxDelaySeconds * 1000;
  for (const announced of [25 * 24 * 3600 * 1000, 1e20, Number.POSITIVE_INFINITY]) {
    assert.equal(
      retryDelayMs(policy, 1, announced, () => 1),
      cap,
      String(announced),
    );
  }
  // The wait leaves a time a Date can hold.
  assert.doesNotThrow(() => new Date(Date.now() + retryDelayMs(policy, 1, 1e20)).toISOString());
});
