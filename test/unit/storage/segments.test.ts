// log/segments.ts: retention drops the oldest segments, never the newest acknowledged lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SessionStore, sessionFileName } from '../../../plugin/hosts/standalone/storage/session-store.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import { quiet, dirBytes, KiB, small } from '../../helpers/storage-fixtures.ts';

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
