// Storage bounds in one process: retention drops the oldest segments and never the newest
// acknowledged entries, cursors survive rotation, the outbox holds no deliveries in memory, runs past
// the in-memory bound are read back from disk, and a line can carry extra fields for later dedupe.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger, RunRecord } from '../../plugin/host.ts';
import { Outbox } from '../../plugin/hosts/standalone/storage/outbox.ts';
import { BadCursorError, SessionStore, sessionFileName } from '../../plugin/hosts/standalone/storage/session-store.ts';
import { Storage } from '../../plugin/hosts/standalone/storage/storage.ts';
import { DEFAULT_STORAGE_LIMITS } from '../../plugin/hosts/standalone/storage/storage-limits.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const small = { segmentBytes: 64 * KiB, retainBytes: 256 * KiB };

async function dirBytes(dir: string, prefix: string): Promise<{ files: string[]; bytes: number }> {
  const files = (await readdir(dir)).filter((f) => f.startsWith(prefix));
  let bytes = 0;
  for (const f of files) bytes += (await stat(path.join(dir, f))).size;
  return { files, bytes };
}

test('retention: a session keeps its newest entries within its bound and drops the oldest segments', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const key = 'agent:main:main';
  const store = new SessionStore(dir, quiet, undefined, small);
  await store.open();
  const text = (n: number) => `event ${n} ${'x'.repeat(1000)}`;
  // Each append is acknowledged (awaited) before the next.
  for (let n = 0; n < 1500; n++) await store.append(key, { kind: 'system-event', text: text(n), hook: 'wake' });
  await store.close();

  const { files, bytes } = await dirBytes(dir, sessionFileName(key));
  assert.ok(files.length > 1, `rotated into segments: ${files.join(', ')}`);
  assert.ok(bytes <= small.retainBytes + small.segmentBytes, `${bytes} bytes kept`);

  const again = new SessionStore(dir, quiet, undefined, small);
  await again.open();
  const kept = (await again.history(key)).map((e) => Number(e.text.split(' ')[1]));
  assert.ok(kept[0]! > 0, 'the oldest entries are gone');
  assert.equal(kept.at(-1), 1499, 'the newest acknowledged entry is kept');
  assert.deepEqual(
    kept,
    Array.from({ length: kept.length }, (_, i) => kept[0]! + i),
    'what is kept is the newest, without gaps',
  );
  assert.ok(kept.length >= (small.retainBytes - 2 * small.segmentBytes) / 1100, `${kept.length} entries kept`);
  await again.close();
});

test('retention: a line larger than a segment is kept whole, and the newest full segment stays whatever its size', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const key = 'agent:main:big';
  const store = new SessionStore(dir, quiet, undefined, small);
  await store.open();
  await store.append(key, { kind: 'prompt', text: 'small one' });
  await store.append(key, { kind: 'prompt', text: 'y'.repeat(300 * KiB) });
  await store.append(key, { kind: 'reply', text: 'z'.repeat(300 * KiB) });
  // Past the bound, the segment holding "small one" went; the newest full segment stays whatever its size.
  const page = await store.historyPage(key, 10);
  assert.deepEqual(
    page.entries.map((e) => e.text),
    ['y'.repeat(300 * KiB), 'z'.repeat(300 * KiB)],
  );
  assert.equal(page.before, undefined);
  await store.close();
});

test('retention: the outbox keeps its newest deliveries within its bound', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const file = path.join(dir, 'outbox.jsonl');
  const outbox = new Outbox(file, quiet, small);
  await outbox.open();
  for (let n = 0; n < 800; n++)
    await outbox.append({
      channel: 'slack',
      to: `#c${n}`,
      text: `delivery ${n} ${'d'.repeat(1000)}`,
      runId: `r${n}`,
      agentId: n % 2 ? 'ops' : 'main',
    });
  await outbox.close();
  const { bytes } = await dirBytes(dir, 'outbox.jsonl');
  assert.ok(bytes <= small.retainBytes + small.segmentBytes, `${bytes} bytes kept`);

  const again = new Outbox(file, quiet, small);
  await again.open();
  const kept = (await again.list()).map((d) => Number(d.runId.slice(1)));
  assert.ok(kept[0]! > 0);
  assert.equal(kept.at(-1), 799);
  // The last routes come from the newest segments alone.
  assert.deepEqual(again.lastRoute('main'), { channel: 'slack', to: '#c798' });
  assert.deepEqual(again.lastRoute('ops'), { channel: 'slack', to: '#c799' });
  await again.close();
});

test('pages: newest first in pages, oldest first within one, and a cursor still names the same place after rotations', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const key = 'agent:main:main';
  const store = new SessionStore(dir, quiet, undefined, { segmentBytes: 64 * KiB, retainBytes: 4 * MiB });
  await store.open();
  for (let n = 0; n < 50; n++) await store.append(key, { kind: 'system-event', text: `e${n}`, hook: 'wake' });
  const newest = await store.historyPage(key, 10);
  assert.deepEqual(
    newest.entries.map((e) => e.text),
    Array.from({ length: 10 }, (_, i) => `e${40 + i}`),
  );
  const cursor = newest.before!;
  // Enough more to rotate the segment holding the cursor several times.
  for (let n = 50; n < 400; n++)
    await store.append(key, { kind: 'system-event', text: `e${n} ${'p'.repeat(1000)}`, hook: 'wake' });
  assert.ok((await readdir(dir)).length > 3, 'rotated');
  const older = await store.historyPage(key, 10, cursor);
  assert.deepEqual(
    older.entries.map((e) => e.text),
    Array.from({ length: 10 }, (_, i) => `e${30 + i}`),
  );
  const oldest = await store.historyPage(key, 100, older.before);
  assert.equal(oldest.entries.length, 30);
  assert.equal(oldest.before, undefined, 'no cursor when nothing older exists');

  // A cursor of another session, a made-up one or one moved off a line start is refused.
  await store.append('agent:main:other', { kind: 'prompt', text: 'a' });
  await store.append('agent:main:other', { kind: 'prompt', text: 'b' });
  const foreign = (await store.historyPage('agent:main:other', 1)).before!;
  await assert.rejects(store.historyPage(key, 10, foreign), BadCursorError);
  await assert.rejects(store.historyPage(key, 10, 'garbage'), BadCursorError);
  const [tag, seq, offset] = cursor.split('.');
  await assert.rejects(store.historyPage(key, 10, `${tag}.${seq}.${Number(offset) + 1}`), BadCursorError);
  await assert.rejects(store.historyPage(key, 10, `${tag}.${seq}.999999999`), BadCursorError);
  await assert.rejects(store.historyPage('agent:main:nobody', 10, cursor), BadCursorError);
  await store.close();
});

test('outbox: deliveries are not held in memory, only the last route of each agent', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const dir = await tempDir('hookgate-bounds-');
  const outbox = new Outbox(path.join(dir, 'outbox.jsonl'), quiet);
  await outbox.open();
  gc();
  const before = process.memoryUsage().heapUsed;
  const text = (n: number) => `${n} ${'t'.repeat(100 * KiB)}`;
  // 150 MB of deliveries, in batches that are each acknowledged.
  for (let n = 0; n < 1500; n += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        outbox.append({ channel: 'slack', text: text(n + i), runId: `r${n + i}`, agentId: `agent-${(n + i) % 3}` }),
      ),
    );
  }
  gc();
  const grew = process.memoryUsage().heapUsed - before;
  assert.ok(grew < 20 * MiB, `the heap grew by ${(grew / MiB).toFixed(1)} MiB`);
  assert.deepEqual(outbox.lastRoute('agent-2'), { channel: 'slack' });
  const page = await outbox.page(2);
  assert.deepEqual(
    page.deliveries.map((d) => d.runId),
    ['r1498', 'r1499'],
  );
  await outbox.close();
});

test('runs: a run gone from memory (past the 10,000 kept) is read back from its session file, before and after a restart', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const open = async () => {
    const storage = new Storage(dir, DEFAULT_STORAGE_LIMITS, quiet);
    const unfinished = await storage.open();
    return { storage, unfinished };
  };
  const { storage } = await open();
  const record = (n: number, status: RunRecord['status'], more: Partial<RunRecord> = {}): RunRecord => ({
    runId: `run-${n}`,
    name: 'Deploy',
    status,
    agentId: 'ops',
    sessionKey: `agent:ops:hook:s${n % 7}`,
    ...more,
  });
  for (let n = 0; n < 10_050; n += 50) {
    const batch: Promise<void>[] = [];
    for (let i = n; i < n + 50; i++) {
      batch.push(storage.runs.update(record(i, 'queued'))!);
      storage.store.write(`agent:ops:hook:s${i % 7}`, { kind: 'prompt', text: `deploy ${i}?`, runId: `run-${i}` });
      if (i % 3 === 0) {
        storage.store.write(`agent:ops:hook:s${i % 7}`, {
          kind: 'reply',
          text: '',
          runId: `run-${i}`,
          error: 'model down',
        });
        void storage.runs.update(record(i, 'error', { error: 'model down' }));
      } else {
        storage.store.write(`agent:ops:hook:s${i % 7}`, { kind: 'reply', text: `deployed ${i}`, runId: `run-${i}` });
        void storage.runs.update(record(i, 'ok', { reply: `deployed ${i}` }));
      }
    }
    await Promise.all(batch);
  }
  assert.equal(storage.runs.get('run-1'), undefined, 'no longer in memory');
  assert.deepEqual(await storage.runs.find('run-1'), record(1, 'ok', { reply: 'deployed 1' }));
  assert.deepEqual(await storage.runs.find('run-3'), record(3, 'error', { error: 'model down' }));
  assert.deepEqual(await storage.runs.find('run-10049'), record(10049, 'ok', { reply: 'deployed 10049' }));
  assert.equal(await storage.runs.find('run-nope'), undefined);
  assert.equal(await storage.runs.find('"},{"runId":"run-1'), undefined);
  await storage.close();

  const again = await open();
  assert.deepEqual(again.unfinished, []);
  assert.deepEqual(await again.storage.runs.find('run-2'), record(2, 'ok', { reply: 'deployed 2' }));
  await again.storage.close();
});

test('a line can carry extra fields beside its record (a dedupe key with its answer), read back by the tail scan on start', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const key = 'agent:main:main';
  const store = new SessionStore(dir, quiet);
  await store.open();
  const idem = { scope: 'wake', key: 'delivery-42', answer: { status: 200, body: { ok: true } } };
  await store.append(key, { kind: 'system-event', text: 'guarded', hook: 'wake', idem });
  await store.close();
  const lines = (await readFile(path.join(dir, sessionFileName(key)), 'utf8')).trim().split('\n');
  assert.equal(lines.length, 2, 'the header and one line holding both the event and its key');
  assert.deepEqual(JSON.parse(lines[1]!).idem, idem);

  const seen: object[] = [];
  const again = new SessionStore(dir, quiet, (_key, records) => seen.push(...records));
  await again.open();
  assert.ok(seen.some((r) => JSON.stringify((r as { idem?: unknown }).idem) === JSON.stringify(idem)));
  await again.close();
});

test('every segment starts with the session header: a long hashed key is found again from the newest segment, even with the newest file missing', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const key = `agent:main:${'k'.repeat(300)}`;
  const name = sessionFileName(key);
  assert.ok(name.includes('~'), 'the name cannot be decoded back to the key');
  const store = new SessionStore(dir, quiet, undefined, small);
  await store.open();
  for (let n = 0; n < 200; n++)
    await store.append(key, { kind: 'system-event', text: `e${n} ${'x'.repeat(1000)}`, hook: 'wake' });
  await store.close();
  const segments = (await readdir(dir)).filter((f) => f.startsWith(`${name}.`));
  assert.ok(segments.length >= 2, segments.join(', '));
  for (const f of [name, ...segments]) {
    const first = JSON.parse((await readFile(path.join(dir, f), 'utf8')).split('\n', 1)[0]!);
    assert.deepEqual([first.kind, first.key], ['session', key], f);
  }

  // A crash right after a rotation renamed the newest file and before the next line was written.
  await rm(path.join(dir, name));
  const again = new SessionStore(dir, quiet, undefined, small);
  await again.open();
  assert.deepEqual(
    again.list().map((s) => s.key),
    [key],
  );
  const page = await again.historyPage(key, 1);
  assert.ok(/^e\d+ /.test(page.entries[0]!.text));
  await again.append(key, { kind: 'system-event', text: 'after', hook: 'wake' });
  assert.deepEqual(
    (await again.historyPage(key, 1)).entries.map((e) => e.text),
    ['after'],
  );
  const older = await again.historyPage(key, 1, (await again.historyPage(key, 1)).before);
  assert.deepEqual(
    older.entries.map((e) => e.text),
    page.entries.map((e) => e.text),
  );
  await again.close();
});
