// Opening a state dir with many sessions: each session's tail is read in one pass (its header is the
// first record of that pass), several sessions at a time. Counted in file opens, not timed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import type { Logger } from '../../plugin/host.ts';
import { SessionStore } from '../../plugin/hosts/standalone/storage/session-store.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const quiet: Logger = { info() {}, warn() {}, error() {} };
const SESSIONS = 300;

/** Counts the files opened (and the most open at once) while fn runs. */
async function countingOpens(fn: () => Promise<void>): Promise<{ opens: number; peak: number }> {
  const original = fsp.open;
  let opens = 0;
  let open = 0;
  let peak = 0;
  fsp.open = (async (...args: Parameters<typeof original>) => {
    opens++;
    peak = Math.max(peak, ++open);
    try {
      const fh = await original(...args);
      const close = fh.close.bind(fh);
      fh.close = () => close().finally(() => open--);
      return fh;
    } catch (err) {
      open--;
      throw err;
    }
  }) as typeof original;
  syncBuiltinESMExports();
  try {
    await fn();
  } finally {
    fsp.open = original;
    syncBuiltinESMExports();
  }
  return { opens, peak };
}

test('open: two file opens per session, several sessions at a time, every session back with its pending events', async () => {
  const dir = path.join(await tempDir('hookgate-session-load-'), 'sessions');
  const first = new SessionStore(dir, quiet);
  await first.open();
  const keys = Array.from({ length: SESSIONS }, (_, i) => `agent:main:hook:s-${String(i).padStart(4, '0')}`);
  for (const key of keys) {
    await first.append(key, { kind: 'system-event', text: `pending ${key}` });
    await first.append(key, { kind: 'prompt', text: 'p' });
  }
  await first.close();

  const visited = new Set<string>();
  const again = new SessionStore(dir, quiet, (key) => visited.add(key));
  const { opens, peak } = await countingOpens(() => again.open());
  // One to check the file's tail before it may be appended to, one to read it.
  assert.ok(opens <= 2 * SESSIONS, `${opens} opens for ${SESSIONS} sessions`);
  assert.ok(peak > 1, 'sessions are read concurrently');
  assert.equal(visited.size, SESSIONS);
  assert.deepEqual(
    again.list().map((s) => s.key),
    [...keys].sort(),
  );
  assert.deepEqual(again.takePending(keys[7]!), [`pending ${keys[7]}`]);
  await again.close();
});
