// The storage block of the standalone gateway's config: defaults, overrides, and bounds that cannot work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../../plugin/errors.ts';
import { resolveGatewaySettings } from '../../plugin/hosts/standalone/server/settings.ts';
import { DEFAULT_STORAGE_SETTINGS } from '../../plugin/hosts/standalone/storage/storage-settings.ts';

const base = { gateway: { auth: { token: 'a-gateway-token-0123456789' } } };

test('storage: defaults when absent, each key overridable', () => {
  assert.deepEqual(resolveGatewaySettings(base, 'gw.json5').storage, DEFAULT_STORAGE_SETTINGS);
  assert.equal(DEFAULT_STORAGE_SETTINGS.fsync, 'interval');
  assert.equal(DEFAULT_STORAGE_SETTINGS.fsyncIntervalMs, 1000);
  const set = resolveGatewaySettings(
    { ...base, storage: { segmentBytes: 1048576, outboxRetainBytes: 8388608 } },
    'gw.json5',
  ).storage;
  assert.deepEqual(set, { ...DEFAULT_STORAGE_SETTINGS, segmentBytes: 1048576, outboxRetainBytes: 8388608 });
  for (const fsync of ['never', 'interval', 'always'] as const) {
    const chosen = resolveGatewaySettings({ ...base, storage: { fsync, fsyncIntervalMs: 250 } }, 'gw.json5').storage;
    assert.deepEqual([chosen.fsync, chosen.fsyncIntervalMs], [fsync, 250]);
  }
});

test('storage: unknown keys, sizes out of range, a retention under two segments and a bad fsync are config errors naming the key', () => {
  const bad: [object, RegExp][] = [
    [{ segmentBytes: 1000 }, /segmentBytes/],
    [{ segmentBytes: 1.5e6 + 0.5 }, /segmentBytes/],
    [{ sessionRetainBytes: -1 }, /sessionRetainBytes/],
    [{ retain: 5 }, /retain/],
    [{ fsync: 'sometimes' }, /storage\.fsync must be one of: never, interval, always/],
    [{ fsync: true }, /storage\.fsync must be one of/],
    [{ fsyncIntervalMs: 0 }, /storage\.fsyncIntervalMs/],
    [{ fsyncIntervalMs: 1.5 }, /storage\.fsyncIntervalMs/],
    [{ segmentBytes: 16777216, runIndexRetainBytes: 16777216 }, /storage\.runIndexRetainBytes must be at least twice/],
  ];
  for (const [storage, message] of bad) {
    assert.throws(
      () => resolveGatewaySettings({ ...base, storage }, 'gw.json5'),
      (err: unknown) => err instanceof ConfigError && message.test(err.message),
      JSON.stringify(storage),
    );
  }
});
