// The Redis client is loaded only by a gateway configured with hooks.sharedState.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import test from 'node:test';
import { post, startTestGateway, HOOK_TOKEN } from '../helpers/recording-host.ts';

const loadedModules = createRequire(import.meta.url).cache;
const redisClientLoaded = (): boolean =>
  Object.keys(loadedModules).some((file) => file.includes('/node_modules/ioredis/'));

test('a gateway without hooks.sharedState serves without loading the Redis client; with it, the client is loaded', async () => {
  const local = await startTestGateway();
  try {
    const r = await post(local.url, '/hooks/wake', { text: 'hello' }, { token: HOOK_TOKEN });
    assert.equal(r.status, 200);
    assert.equal(redisClientLoaded(), false);
  } finally {
    await local.close();
  }

  // Nothing listens on port 1: the gateway starts on local state, but it did load the client.
  const shared = await startTestGateway({ hooks: { sharedState: { redis: 'redis://127.0.0.1:1' } } });
  try {
    const r = await post(shared.url, '/hooks/wake', { text: 'hello' }, { token: HOOK_TOKEN });
    assert.equal(r.status, 200);
    assert.equal(redisClientLoaded(), true);
  } finally {
    await shared.close();
  }
});
