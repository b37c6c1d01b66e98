// Pooled random ids: right length, hex, never repeated across pool refills.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomHex } from '../../plugin/util/random-hex.ts';

test('random ids are hex of the asked length and do not repeat across many pool refills', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 20_000; i++) {
    const id = randomHex(12);
    assert.match(id, /^[0-9a-f]{24}$/);
    seen.add(id);
  }
  assert.equal(seen.size, 20_000);
  assert.throws(() => randomHex(5000), RangeError);
});
