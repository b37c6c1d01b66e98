// The OpenClaw manifest's configSchema is what OpenClaw checks the plugin's settings against before
// the plugin sees them: every key of the hooks config must pass it, or OpenClaw refuses the config.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (file: string): any => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const manifest = read('openclaw.plugin.json');
const hooksSchema = read('schema/hooks-config.schema.json');

test('the manifest accepts every key of the hooks config', () => {
  const missing = Object.keys(hooksSchema.properties).filter((k) => !(k in manifest.configSchema.properties));
  assert.deepEqual(missing, []);
});

test('a config using dedupe, sharedState and gmail passes the manifest; an unknown key does not', () => {
  const validate = new Ajv({ strict: false }).compile(manifest.configSchema);
  const config = {
    enabled: true,
    token: 'manifest-test-token-0123456789',
    dedupe: { windowSeconds: 3600, maxKeys: 5000 },
    sharedState: { redis: 'redis://127.0.0.1:6379' },
    gmail: { account: 'a@example.com' },
  };
  assert.equal(validate(config), true, JSON.stringify(validate.errors));
  assert.equal(validate({ ...config, dedupeWindow: 1 }), false);
});
