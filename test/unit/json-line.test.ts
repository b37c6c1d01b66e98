// Log lines written without JSON.stringify copying their large strings must still be exactly its JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  jsonLineBytes,
  jsonLineText,
  toJsonLine,
  writeJsonLine,
} from '../../plugin/hosts/standalone/storage/log/json-line.ts';

function written(record: object): string {
  const line = toJsonLine(record);
  const buf = Buffer.alloc(jsonLineBytes(line));
  assert.equal(writeJsonLine(line, buf, 0), buf.length);
  return buf.toString('utf8');
}

test('large plain strings are kept by reference, and the line is exactly JSON.stringify', () => {
  const big = 'x'.repeat(20_000);
  const record = {
    kind: 'system-event',
    text: big,
    at: '2026-11-21T00:00:00.000Z',
    gone: undefined,
    n: 3,
    nested: { a: [1, 'b'] },
  };
  const line = toJsonLine(record);
  assert.ok(Array.isArray(line) && line.includes(big), 'the large text is a piece of its own');
  assert.equal(jsonLineText(line), JSON.stringify(record));
  assert.equal(written(record), JSON.stringify(record));
  assert.equal(toJsonLine({ text: 'small' }), '{"text":"small"}');
});

test('large strings that need escaping, and any mix of fields, come out as JSON.stringify writes them', () => {
  const large = fc
    .tuple(fc.string({ unit: 'binary', maxLength: 8 }), fc.nat(30_000), fc.string({ unit: 'binary', maxLength: 8 }))
    .map(([a, n, b]) => a + 'é'.repeat(n) + b);
  const value = fc.oneof(
    fc.string({ unit: 'binary' }),
    large,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(fc.string()),
  );
  fc.assert(
    fc.property(fc.dictionary(fc.string(), value, { maxKeys: 5 }), (record) => {
      assert.equal(written(record), JSON.stringify(record));
      assert.equal(jsonLineText(toJsonLine(record)), JSON.stringify(record));
    }),
    { numRuns: 200 },
  );
});
