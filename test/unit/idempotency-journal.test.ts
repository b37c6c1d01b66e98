// The OpenClaw host's idempotency journal on a real state dir: keys come back after a restart with
// their body hashes, and compaction shares maxKeys fairly between scopes like the keys in memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { IdempotencyJournal } from '../../plugin/hosts/openclaw/idempotency-journal.ts';
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
