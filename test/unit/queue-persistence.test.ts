// The start warning about the queue's Redis (plugin/queue/redis-persistence.ts): from CONFIG GET, or
// from INFO where a managed Redis refuses CONFIG, and nothing at all when neither tells.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { persistenceWarnings } from '../../plugin/queue/redis-persistence.ts';

/** A client answering CONFIG GET with `config` (or refusing it) and INFO with `info` (or refusing it). */
function client(config: string[] | undefined, info: Record<string, string> | undefined): Redis {
  return {
    call: async () => {
      if (!config) throw new Error("ERR unknown command 'CONFIG'");
      return config;
    },
    info: async (section: string) => {
      if (!info) throw new Error("ERR unknown command 'INFO'");
      return info[section] ?? '';
    },
  } as unknown as Redis;
}

test('AOF off and an evicting policy are both said, from CONFIG GET', async () => {
  const warnings = await persistenceWarnings(
    client(['appendonly', 'no', 'maxmemory-policy', 'allkeys-lru'], undefined),
  );
  assert.equal(warnings.length, 2);
  assert.match(warnings[0]!, /AOF off \(appendonly no\)/);
  assert.match(warnings[1]!, /maxmemory-policy allkeys-lru/);
});

test('AOF on with noeviction: nothing to say', async () => {
  assert.deepEqual(
    await persistenceWarnings(client(['appendonly', 'yes', 'maxmemory-policy', 'noeviction'], undefined)),
    [],
  );
});

test('CONFIG refused (a managed Redis): INFO tells instead', async () => {
  const warnings = await persistenceWarnings(
    client(undefined, {
      persistence: '# Persistence\r\naof_enabled:0\r\n',
      memory: '# Memory\r\nmaxmemory_policy:volatile-lru\r\n',
    }),
  );
  assert.equal(warnings.length, 2);
  assert.match(warnings[0]!, /AOF off/);
  assert.match(warnings[1]!, /volatile-lru/);
  const fine = await persistenceWarnings(
    client(undefined, { persistence: 'aof_enabled:1\r\n', memory: 'maxmemory_policy:noeviction\r\n' }),
  );
  assert.deepEqual(fine, []);
});

test('neither CONFIG nor INFO answers: nothing is claimed', async () => {
  assert.deepEqual(await persistenceWarnings(client(undefined, undefined)), []);
});
