// run-registry.ts: runs in memory within bounds, read back from the session files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  readRun,
  REPLY_BYTES_IN_MEMORY,
  RunRegistry,
  type RunLine,
  type RunLineWriter,
} from '../../../plugin/hosts/standalone/storage/run-registry.ts';
import { SessionStore, sessionFileName } from '../../../plugin/hosts/standalone/storage/session-store.ts';
import { Storage } from '../../../plugin/hosts/standalone/storage/storage.ts';
import { DEFAULT_STORAGE_SETTINGS } from '../../../plugin/hosts/standalone/storage/storage-settings.ts';
import { tempDir } from '../../helpers/temp-dir.ts';
import { recordingLogger, withTempDir, quiet } from '../../helpers/storage-fixtures.ts';
import type { RunRecord } from '../../../plugin/host.ts';

/** For registries whose lines go nowhere in the test. */
const UNUSED_WRITER: RunLineWriter = { record: () => Promise.resolve(), queue: () => {} };

test('run registry: keeps the 10,000 most recently accepted runs in memory, each with its latest status', () => {
  const written: { key: string; line: RunLine; wait: boolean }[] = [];
  const registry = new RunRegistry({
    record: (key, line) => {
      written.push({ key, line, wait: true });
      return Promise.resolve();
    },
    queue: (key, line) => void written.push({ key, line, wait: false }),
  });
  const run = (n: number, status: 'queued' | 'running' | 'ok') => ({
    runId: `run-${n}`,
    name: 'agent',
    status,
    agentId: 'main',
    sessionKey: 'agent:main:hook:x',
  });
  for (let n = 0; n < 10_005; n++) {
    void registry.update(run(n, 'queued'));
    void registry.update(run(n, 'running'));
    // Every other run finishes at once; the rest are left running.
    if (n % 2 === 0) void registry.update({ ...run(n, 'ok'), reply: `reply ${n}` });
  }
  for (let n = 0; n < 5; n++) assert.equal(registry.get(`run-${n}`), undefined, `run-${n} is forgotten`);
  assert.equal(registry.get('run-5')?.status, 'running');
  assert.deepEqual(registry.get('run-6'), { ...run(6, 'ok'), reply: 'reply 6' });
  assert.equal(registry.get('run-10004')?.status, 'ok');
  // A forgotten run that still ends is remembered again, in place of the oldest.
  void registry.update({ ...run(1, 'ok'), reply: 'late' });
  assert.equal(registry.get('run-1')?.reply, 'late');
  assert.equal(registry.get('run-5'), undefined);
  assert.equal(registry.get('run-7')?.status, 'running');

  // Lines go to the run's session: acceptance waited for, "running" never written, the reply left to the history.
  const [accepted, finished] = written.filter((w) => w.line.runId === 'run-6');
  assert.deepEqual([accepted?.key, accepted?.line.status, accepted?.wait], ['agent:main:hook:x', 'queued', true]);
  assert.deepEqual([finished?.line.status, finished?.wait, 'reply' in finished!.line], ['ok', false, false]);
  assert.equal(written.length, 10_005 + 5_003 + 1);
});

test('run registry: rebuilt from the session files, with the reply from the history and the runs never finished', async () => {
  await withTempDir(async (dir) => {
    const open = async () => {
      const registry: RunRegistry = new RunRegistry(
        { record: (key, line) => store.recordRun(key, line), queue: (key, line) => store.queueRun(key, line) },
        // The run index's job in the gateway: here every run of the test is in a session it names.
        (runId) =>
          readRun(
            (key, needle, visit) => store.scanBackward(key, needle, visit),
            runId === 'r-ok' ? 'agent:ops:hook:a' : 'agent:ops:hook:b',
            runId,
          ),
      );
      const store: SessionStore = new SessionStore(dir, recordingLogger(), (key, records) =>
        registry.restore(key, records),
      );
      await store.open();
      return { store, registry, unfinished: registry.restored() };
    };
    const first = await open();
    const record = (runId: string, sessionKey: string, status: RunRecord['status'], more: Partial<RunRecord> = {}) => ({
      runId,
      name: 'Deploy',
      status,
      agentId: 'ops',
      sessionKey,
      ...more,
    });
    await first.registry.update(record('r-ok', 'agent:ops:hook:a', 'queued'));
    await first.store.append('agent:ops:hook:a', { kind: 'prompt', text: 'deploy?', runId: 'r-ok' });
    await first.store.append('agent:ops:hook:a', { kind: 'reply', text: 'deployed', runId: 'r-ok' });
    void first.registry.update(record('r-ok', 'agent:ops:hook:a', 'ok', { reply: 'deployed' }));
    await first.registry.update(record('r-failed', 'agent:ops:hook:b', 'queued'));
    await first.store.append('agent:ops:hook:b', { kind: 'reply', text: '', runId: 'r-failed', error: 'model down' });
    void first.registry.update(record('r-failed', 'agent:ops:hook:b', 'error', { error: 'model down' }));
    await first.registry.update(record('r-cut', 'agent:ops:hook:b', 'queued'));
    void first.registry.update(record('r-cut', 'agent:ops:hook:b', 'running'));
    await first.store.close();

    const second = await open();
    // A restored reply stays in its session file until the run is asked for.
    assert.deepEqual(second.registry.get('r-ok'), record('r-ok', 'agent:ops:hook:a', 'ok'));
    assert.deepEqual(
      await second.registry.find('r-ok'),
      record('r-ok', 'agent:ops:hook:a', 'ok', { reply: 'deployed' }),
    );
    assert.deepEqual(
      second.registry.get('r-failed'),
      record('r-failed', 'agent:ops:hook:b', 'error', { error: 'model down' }),
    );
    assert.deepEqual(second.unfinished, [record('r-cut', 'agent:ops:hook:b', 'queued')]);
    // Status lines are in the file but not in the history.
    assert.deepEqual(
      (await second.store.history('agent:ops:hook:a')).map((e) => e.kind),
      ['prompt', 'reply'],
    );
    assert.equal((await second.store.history('agent:ops:hook:b')).length, 1);
    assert.match(
      await readFile(path.join(dir, sessionFileName('agent:ops:hook:b')), 'utf8'),
      /"kind":"run","runId":"r-cut","status":"queued"/,
    );
    await second.store.close();
  });
});

test('run registry: a restart keeps the 10,000 most recently accepted runs across session files, and every unfinished one', () => {
  const registry = new RunRegistry(UNUSED_WRITER);
  const at = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
  const line = (n: number, status: RunLine['status']): RunLine => ({
    kind: 'run',
    runId: `run-${n}`,
    status,
    name: 'agent',
    agentId: 'main',
    at: at(n),
  });
  // Two sessions whose runs alternate in time; the oldest run of all was never finished.
  const files: Record<string, object[]> = { 'agent:main:hook:even': [], 'agent:main:hook:odd': [] };
  for (let n = 0; n < 10_010; n++) {
    const file = files[n % 2 === 0 ? 'agent:main:hook:even' : 'agent:main:hook:odd']!;
    file.push(line(n, 'queued'));
    if (n > 0) file.push({ kind: 'reply', text: `reply ${n}`, runId: `run-${n}`, at: at(n) }, line(n, 'ok'));
  }
  // Read in name order: every run of "even" before any of "odd".
  registry.restore('agent:main:hook:even', files['agent:main:hook:even']!);
  registry.restore('agent:main:hook:odd', files['agent:main:hook:odd']!);
  assert.deepEqual(
    registry.restored().map((r) => r.runId),
    ['run-0'],
  );
  assert.equal(registry.get('run-0')?.status, 'queued');
  for (let n = 1; n <= 10; n++) assert.equal(registry.get(`run-${n}`), undefined, `run-${n} is among the oldest`);
  // Replies stay in the files (read back when a run is asked for): a start holds none of them.
  assert.deepEqual(registry.get('run-11'), {
    runId: 'run-11',
    name: 'agent',
    status: 'ok',
    agentId: 'main',
    sessionKey: 'agent:main:hook:odd',
  });
  assert.equal(registry.get('run-10009')?.status, 'ok');
});

test('run registry: replies kept in memory are bounded by bytes; older ones are read back from their session file', async () => {
  const reads: string[] = [];
  const registry = new RunRegistry(UNUSED_WRITER, async (runId) => {
    reads.push(runId);
    return { runId, name: 'agent', status: 'ok', agentId: 'main', sessionKey: 'k', reply: `from disk ${runId}` };
  });
  const reply = 'r'.repeat(256 * 1024);
  const runs = Math.ceil((2 * REPLY_BYTES_IN_MEMORY) / reply.length);
  for (let n = 0; n < runs; n++) {
    const run = { runId: `run-${n}`, name: 'agent', status: 'queued' as const, agentId: 'main', sessionKey: 'k' };
    void registry.update(run);
    void registry.update({ ...run, status: 'ok', reply });
  }
  let kept = 0;
  for (let n = 0; n < runs; n++) kept += registry.get(`run-${n}`)?.reply?.length ?? 0;
  assert.ok(kept <= REPLY_BYTES_IN_MEMORY, `${kept} bytes of replies in memory`);
  assert.ok(kept > REPLY_BYTES_IN_MEMORY / 2, 'the newest replies stay in memory');
  // The newest is served from memory; the oldest from its file.
  assert.equal((await registry.find(`run-${runs - 1}`))?.reply, reply);
  assert.deepEqual(reads, []);
  assert.equal((await registry.find('run-0'))?.reply, 'from disk run-0');
  assert.deepEqual(reads, ['run-0']);
  assert.equal(registry.get('run-0')?.status, 'ok');
  // One reply larger than the whole budget is not kept either.
  void registry.update({
    runId: 'huge',
    name: 'agent',
    status: 'ok',
    agentId: 'main',
    sessionKey: 'k',
    reply: 'h'.repeat(REPLY_BYTES_IN_MEMORY + 1),
  });
  assert.equal(registry.get('huge')?.reply, undefined);
  assert.equal((await registry.find('huge'))?.reply, 'from disk huge');
});

test('runs: a run gone from memory (past the 10,000 kept) is read back from its session file, before and after a restart', async () => {
  const dir = await tempDir('hookgate-bounds-');
  const open = async () => {
    const storage = new Storage(dir, DEFAULT_STORAGE_SETTINGS, quiet);
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
