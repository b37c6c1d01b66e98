// session-store.ts: history, pending events, file names and headers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  PENDING_TEXT_MAX,
  SessionStore,
  decodeSessionFileName,
  sessionFileName,
} from '../../../plugin/hosts/standalone/storage/session-store.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import { recordingLogger, withTempDir, quiet, small } from '../../helpers/storage-fixtures.ts';

test('session store: history, list and agent ids survive a restart', async () => {
  await withTempDir(async (dir) => {
    const sessionsDir = path.join(dir, 'state', 'sessions');
    const store = new SessionStore(sessionsDir, recordingLogger());
    await store.open();
    assert.deepEqual(store.list(), []);
    await Promise.all([
      store.append('agent:ops:main', {
        kind: 'system-event',
        text: 'disk full',
        hook: 'wake',
        at: '2024-01-01T00:00:00.000Z',
      }),
      store.append('agent:ops:hook:gmail:1', {
        kind: 'prompt',
        text: 'summarise',
        runId: 'r1',
        at: '2024-01-01T00:00:01.000Z',
      }),
      store.append('agent:ops:hook:gmail:1', {
        kind: 'reply',
        text: 'done',
        runId: 'r1',
        at: '2024-01-01T00:00:02.000Z',
      }),
      store.append('plain-key', { kind: 'prompt', text: 'hello' }),
    ]);
    const before = store.list();
    await store.close();

    const again = new SessionStore(sessionsDir, recordingLogger());
    await again.open();
    assert.deepEqual(again.list(), before);
    assert.deepEqual(
      again.list().map((s) => [s.key, s.agentId]),
      [
        ['agent:ops:hook:gmail:1', 'ops'],
        ['agent:ops:main', 'ops'],
        ['plain-key', 'main'],
      ],
    );
    assert.equal(again.list()[0]!.updatedAt, '2024-01-01T00:00:02.000Z');
    assert.deepEqual(await again.history('agent:ops:hook:gmail:1'), [
      { kind: 'prompt', text: 'summarise', at: '2024-01-01T00:00:01.000Z', runId: 'r1' },
      { kind: 'reply', text: 'done', at: '2024-01-01T00:00:02.000Z', runId: 'r1' },
    ]);
    const plain = await again.history('plain-key');
    assert.equal(plain.length, 1);
    assert.ok(!Number.isNaN(Date.parse(plain[0]!.at)), 'a default ISO time is filled in');
    assert.deepEqual(await again.history('agent:nobody:main'), []);
    await again.close();
  });
});

test('session store: a large pending event waits clipped in memory; the file keeps it whole', async () => {
  await withTempDir(async (dir) => {
    const key = 'agent:main:main';
    const big = `start ${'x'.repeat(200 * 1024)} end`;
    const store = new SessionStore(dir, recordingLogger());
    await store.open();
    await store.append(key, { kind: 'system-event', text: big, hook: 'wake' });
    await store.append(key, { kind: 'system-event', text: 'small', hook: 'wake' });
    const [clipped, small] = store.takePending(key);
    assert.equal(clipped, `${big.slice(0, PENDING_TEXT_MAX)}… (clipped)`);
    assert.equal(small, 'small');
    assert.equal((await store.history(key)).find((e) => e.kind === 'system-event')?.text, big);
    await store.close();

    const restarted = new SessionStore(dir, recordingLogger());
    await restarted.open();
    assert.deepEqual(restarted.takePending(key), [clipped, 'small']);
    await restarted.close();
  });
});

test('session store: pending system events are rebuilt after a restart and cleared by heartbeats', async () => {
  await withTempDir(async (dir) => {
    const key = 'agent:main:main';
    const store = new SessionStore(dir, recordingLogger());
    await store.open();
    await store.append(key, { kind: 'system-event', text: 'one', hook: 'wake' });
    await store.append(key, { kind: 'system-event', text: 'two', hook: 'wake' });
    assert.equal(store.pendingCount(key), 2);
    void store.append(key, { kind: 'heartbeat', text: 'heartbeat' });
    assert.equal(store.pendingCount(key), 0, 'a heartbeat entry clears pending events at once');
    await store.append(key, { kind: 'system-event', text: 'three', hook: 'wake' });
    await store.append(key, { kind: 'system-event', text: 'four', hook: 'gmail' });
    assert.equal(store.pendingCount(key), 2);
    await store.close();

    const restarted = new SessionStore(dir, recordingLogger());
    await restarted.open();
    assert.equal(restarted.pendingCount(key), 2);
    assert.deepEqual(restarted.takePending(key), ['three', 'four']);
    assert.equal(restarted.pendingCount(key), 0);
    assert.deepEqual(restarted.takePending(key), []);
    assert.deepEqual(restarted.takePending('agent:main:unknown'), []);
    await restarted.append(key, { kind: 'heartbeat', text: 'heartbeat' });
    await restarted.close();

    const third = new SessionStore(dir, recordingLogger());
    await third.open();
    assert.equal(third.pendingCount(key), 0, 'the heartbeat entry made them non-pending on disk too');
    const kinds = (await third.history(key)).map((e) => e.kind);
    assert.deepEqual(kinds, ['system-event', 'system-event', 'heartbeat', 'system-event', 'system-event', 'heartbeat']);
    await third.close();
  });
});

test('session store: hostile and unicode keys map to files directly inside the dir', async () => {
  await withTempDir(async (root) => {
    const dir = path.join(root, 'sessions');
    const keys = [
      'agent:main:main',
      'agent:main:../../../etc/passwd',
      'agent:main:a/b\\c',
      '..',
      '.',
      '.hidden',
      'agent:main:héllo wörld 🎉',
      'agent:main:Main',
      'agent:main:main ',
      'agent:main:' + 'x'.repeat(400),
      'agent:main:' + '日本語'.repeat(100),
      'agent:main:' + 'x'.repeat(400) + 'y',
    ];
    for (const key of keys) {
      const name = sessionFileName(key);
      assert.ok(!name.includes('/') && !name.includes('\\') && !name.includes('..'), name);
      assert.ok(Buffer.byteLength(name) <= 255, `name too long for ${key.slice(0, 30)}`);
      assert.equal(name, name.toLowerCase(), 'no upper case (case-insensitive file systems)');
      if (!name.includes('~')) assert.equal(decodeSessionFileName(name), key);
    }
    assert.equal(new Set(keys.map((k) => sessionFileName(k).toLowerCase())).size, keys.length, 'distinct names');

    const store = new SessionStore(dir, recordingLogger());
    await store.open();
    await Promise.all(keys.map((key, i) => store.append(key, { kind: 'prompt', text: `t${i}` })));
    await store.close();

    assert.deepEqual(await readdir(root), ['sessions'], 'nothing written outside the sessions dir');
    const files = await readdir(dir);
    assert.equal(files.length, keys.length);
    for (const f of files) assert.ok((await stat(path.join(dir, f))).isFile());

    const again = new SessionStore(dir, recordingLogger());
    await again.open();
    assert.deepEqual(
      again.list().map((s) => s.key),
      [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    for (const [i, key] of keys.entries()) {
      assert.deepEqual(
        (await again.history(key)).map((e) => e.text),
        [`t${i}`],
      );
    }
    await again.close();
  });
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
