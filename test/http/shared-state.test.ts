// The plugin with hooks.sharedState over loopback HTTP, on a real redis-server: its state getter
// through an outage, per-item keys of a forEach shared by two plugins, a reload that changes the
// setting, and close() letting go of its connections.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { post, startTestGateway, withGateway } from '../helpers/recording-host.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { waitUntil } from '../helpers/common.ts';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

const hooks = (keyPrefix: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  sharedState: { redis: redis.url, keyPrefix },
  ...extra,
});

test('without hooks.sharedState there is no shared state to report', async () => {
  await withGateway({}, async (gw) => {
    assert.equal(gw.plugin.sharedStateUp, undefined);
  });
});

test('forEach with per-item keys on two plugins sharing Redis: each item acts once in all', async () => {
  const mapping = {
    id: 'alerts',
    match: { path: 'alerts' },
    action: 'wake',
    forEach: 'alerts',
    allowUnsafeExternalContent: true,
    textTemplate: 'alert {{item.id}}',
    dedupe: { key: '{{item.id}}' },
  };
  const a = await startTestGateway({ hooks: hooks('http-each:', { mappings: [mapping] }) });
  const b = await startTestGateway({ hooks: hooks('http-each:', { mappings: [mapping] }) });
  try {
    const first = await post(a.url, '/hooks/alerts', { alerts: [{ id: 'a1' }, { id: 'a2' }] });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const second = await post(b.url, '/hooks/alerts', { alerts: [{ id: 'a2' }, { id: 'a3' }] });
    assert.equal(second.status, 200);
    assert.equal(second.body.duplicates, 1, 'a2 was acted on by the other instance');
    const again = await post(b.url, '/hooks/alerts', { alerts: [{ id: 'a1' }] });
    assert.equal(again.body.duplicate, true);
    const texts = [...a.rec.events, ...b.rec.events].map((e) => e.text).sort();
    assert.deepEqual(
      texts.map((t) => /alert a\d/.exec(t)?.[0]),
      ['alert a1', 'alert a2', 'alert a3'],
    );
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('sharedStateUp follows Redis through an outage; requests go on; one warning, one line when back', async () => {
  const gw = await startTestGateway({ hooks: hooks('http-up:') });
  try {
    assert.equal(gw.plugin.sharedStateUp, true);
    await redis.kill();
    await waitUntil(() => gw.plugin.sharedStateUp === false, 'down');
    for (let i = 0; i < 5; i++) {
      const r = await post(
        gw.url,
        '/hooks/wake',
        { text: `during outage ${i}` },
        { headers: { 'idempotency-key': `o${i}` } },
      );
      assert.equal(r.status, 200);
    }
    const wrong = await post(gw.url, '/hooks/wake', { text: 'x' }, { token: 'wrong' });
    assert.equal(wrong.status, 401);
    await redis.start();
    await waitUntil(() => gw.plugin.sharedStateUp === true, 'back', 10_000);
    const warned = gw.rec.logs.filter((l) => l.level === 'warn' && /shared state on Redis unavailable/.test(l.msg));
    assert.equal(warned.length, 1);
    assert.equal(gw.rec.logs.filter((l) => /shared state on Redis is back/.test(l.msg)).length, 1);
  } finally {
    await gw.close();
  }
});

test('a reload that changes hooks.sharedState says it takes effect at the next start', async () => {
  const gw = await startTestGateway({ hooks: hooks('http-reload:') });
  try {
    const file = JSON.parse(await readFile(gw.configPath, 'utf8'));
    file.hooks.sharedState.keyPrefix = 'other:';
    await writeFile(gw.configPath, JSON.stringify(file));
    const result = await gw.plugin.reload();
    assert.ok(result.ok);
    assert.ok(gw.rec.logs.some((l) => l.level === 'warn' && /sharedState changed/.test(l.msg)));
    assert.equal(gw.plugin.sharedStateUp, true);
  } finally {
    await gw.close();
  }
});

test('close() lets go of its Redis connections', async () => {
  const observer = new Redis(redis.url);
  try {
    const clients = async (): Promise<number> =>
      String(await observer.call('CLIENT', 'LIST'))
        .trim()
        .split('\n').length;
    const before = await clients();
    const gw = await startTestGateway({ hooks: hooks('http-close:') });
    assert.equal(await clients(), before + 2, 'one connection for commands, one for pub/sub');
    await gw.close();
    await waitUntil(async () => (await clients()) === before, 'both connections closed');
  } finally {
    observer.disconnect();
  }
});
