// SessionStore.delete (hooks.sessionRetention): a session goes with every rotated segment, whether
// rotated in this process or listed at start, and other sessions' files stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { SessionStore, sessionFileName } from '../../../plugin/hosts/standalone/storage/session-store.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import { quiet, small } from '../../helpers/storage-fixtures.ts';

const text = (n: number) => `event ${n} ${'x'.repeat(1000)}`;
const gone = 'agent:main:hook:0b5e8c1a-8d1e-4c7f-9a37-3f9d1f4b2a10';
const kept = 'agent:main:hook:named';

async function filled(dir: string): Promise<SessionStore> {
  const store = new SessionStore(dir, quiet, undefined, small);
  await store.open();
  for (let n = 0; n < 200; n++) await store.append(gone, { kind: 'system-event', text: text(n), hook: 'wake' });
  await store.append(kept, { kind: 'system-event', text: 'stays', hook: 'wake' });
  return store;
}

test('a session rotated in this process goes whole; the others stay', async () => {
  const dir = await tempDir('hookgate-delete-');
  const store = await filled(dir);
  const before = (await readdir(dir)).filter((f) => f.startsWith(sessionFileName(gone)));
  assert.ok(before.length > 1, `rotated into segments: ${before.join(', ')}`);
  await store.delete(gone);
  assert.deepEqual(await readdir(dir), [sessionFileName(kept)]);
  assert.ok(!store.list().some((s) => s.key === gone));
  assert.deepEqual(await store.history(gone), []);
  await store.close();
});

test('a session whose segments were listed at start goes whole', async () => {
  const dir = await tempDir('hookgate-delete-');
  await (await filled(dir)).close();
  const again = new SessionStore(dir, quiet, undefined, small);
  await again.open();
  await again.delete(gone);
  assert.deepEqual(await readdir(dir), [sessionFileName(kept)]);
  await again.close();
});
