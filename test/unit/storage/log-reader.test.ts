// log/log-reader.ts: pages and cursors across rotations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { BadCursorError, SessionStore } from '../../../plugin/hosts/standalone/storage/session-store.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import { quiet, KiB, MiB } from '../../helpers/storage-fixtures.ts';

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
