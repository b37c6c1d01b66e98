// The OpenClaw host's idempotency journal on a real state dir: keys come back after a restart with
// their body hashes, and compaction shares maxKeys fairly between scopes like the keys in memory; a
// key the last process wrote only in its event's acknowledgement line comes back too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp, { readFile } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { IdempotencyJournal } from '../../plugin/hosts/openclaw/idempotency-journal.ts';
import { AckJournal } from '../../plugin/hosts/openclaw/ack-journal.ts';
import { restoreKeys } from '../../plugin/hosts/openclaw/host.ts';
import type { IdempotencyRecord } from '../../plugin/host.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const LIMITS = { windowMs: 60_000, maxKeys: 10 };

const record = (scope: string, key: string): IdempotencyRecord => ({
  scope,
  key,
  at: Date.now(),
  status: 202,
  body: { ok: true, runId: `run-${key}` },
  bodyHash: '0123456789abcdef',
});

test("a flood of one scope's keys, compacted: another scope's keys stay, with their body hashes", async () => {
  const dir = await tempDir('hookgate-journal-');
  const journal = new IdempotencyJournal();
  await journal.open(dir);
  assert.deepEqual(await journal.restore(LIMITS), []);
  for (const k of ['r1', 'r2', 'r3']) await journal.append(record('agent', k));
  for (let i = 0; i < 60; i++) await journal.append(record('mapping:flood', `f${i}`));

  const lines = (await readFile(path.join(dir, 'hookgate', 'idempotency.jsonl'), 'utf8')).trim().split('\n');
  assert.ok(lines.length <= 2 * LIMITS.maxKeys, `${lines.length} lines: compacted`);

  const restarted = new IdempotencyJournal();
  await restarted.open(dir);
  const kept = await restarted.restore(LIMITS);
  assert.equal(kept.length, 10);
  assert.deepEqual(
    kept.filter((r) => r.scope === 'agent'),
    ['r1', 'r2', 'r3'].map((k) => ({ ...record('agent', k), at: kept.find((r) => r.key === k)!.at })),
  );
  assert.deepEqual(
    kept.filter((r) => r.scope === 'mapping:flood').map((r) => r.key),
    ['f53', 'f54', 'f55', 'f56', 'f57', 'f58', 'f59'],
  );
});

test('a key only in its event’s acknowledgement line (a crash before its own line) comes back, and is kept from then on', async () => {
  const dir = await tempDir('hookgate-journal-');
  const acks = new AckJournal();
  await acks.open(dir);
  const journal = new IdempotencyJournal();
  await journal.open(dir);
  const inBoth = record('wake', 'both');
  await acks.event({ id: 'e1', at: Date.now(), sessionKey: 'agent:main:main', text: 'one', idem: inBoth });
  await journal.append(inBoth);
  // The digest's event written with its mark, then the process died before the journal's line.
  const mark = { scope: 'hookgate:digest', key: 'budget:spend@1', at: Date.now(), status: 202 };
  await acks.event({ id: 'e2', at: Date.now(), sessionKey: 'agent:main:main', text: 'digest', idem: mark });

  const pending = await new AckJournal().open(dir);
  const reopened = new IdempotencyJournal();
  await reopened.open(dir);
  const keys = await restoreKeys(reopened, pending.keys, LIMITS);
  assert.deepEqual(
    keys.map((r) => [r.scope, r.key]),
    [
      ['wake', 'both'],
      ['hookgate:digest', 'budget:spend@1'],
    ],
  );
  // Appended to the journal: the next start has it even once the event's line is gone.
  const again = new IdempotencyJournal();
  await again.open(dir);
  assert.deepEqual(
    (await again.restore(LIMITS)).map((r) => r.key),
    ['both', 'budget:spend@1'],
  );
});

test('keys that come while a write is under way go out together in the next one, each resolved once on disk, in order', async () => {
  const dir = await tempDir('hookgate-journal-');
  const journal = new IdempotencyJournal();
  await journal.open(dir);
  await journal.restore({ windowMs: 60_000, maxKeys: 1000 });
  // The appends the journal makes, counted through the builtin's own export (its named imports follow).
  let appends = 0;
  const original = fsp.appendFile;
  fsp.appendFile = ((...args: Parameters<typeof original>) => {
    appends++;
    return original(...args);
  }) as typeof original;
  syncBuiltinESMExports();
  try {
    const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
    await Promise.all(keys.map((k) => journal.append(record('agent', k))));
    assert.ok(appends <= 2, `${appends} appends for 50 keys at once`);
    const lines = (await readFile(path.join(dir, 'hookgate', 'idempotency.jsonl'), 'utf8')).trim().split('\n');
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as IdempotencyRecord).key),
      keys,
    );
  } finally {
    fsp.appendFile = original;
    syncBuiltinESMExports();
  }
});
