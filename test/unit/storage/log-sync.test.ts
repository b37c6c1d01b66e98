// storage.fsync's background sync (util/file-sync.ts), on mocked timers: under "interval" every log
// written since the first unsynced write is synced once, an interval after that write; "never" and
// "always" schedule nothing here ("always" syncs in the log's own round:
// test/process/storage-fsync.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { FileSync, type SyncTarget } from '../../../plugin/util/file-sync.ts';
import { JsonlLog, LogResources } from '../../../plugin/hosts/standalone/storage/log/jsonl-log.ts';
import { recordingLogger, withTempDir, type Rec } from '../../helpers/storage-fixtures.ts';

function target(): SyncTarget & { syncs: number } {
  const t = {
    syncs: 0,
    syncNow: async () => {
      t.syncs++;
    },
  };
  return t;
}

test('log sync "interval": the logs written since the first unsynced write are synced once, an interval after it', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const sync = new FileSync('interval', 1000);
  const a = target();
  const b = target();
  sync.written(a);
  t.mock.timers.tick(400);
  sync.written(b);
  sync.written(a);
  t.mock.timers.tick(599);
  assert.deepEqual([a.syncs, b.syncs], [0, 0], 'nothing before the interval of the first write');
  t.mock.timers.tick(1);
  assert.deepEqual([a.syncs, b.syncs], [1, 1], 'both at the interval of the first write, once each');
  t.mock.timers.tick(5000);
  assert.deepEqual([a.syncs, b.syncs], [1, 1], 'nothing written since: no further sync');
  sync.written(b);
  t.mock.timers.tick(1000);
  assert.deepEqual([a.syncs, b.syncs], [1, 2], 'a later write gets its own sync');
});

test('log sync "never" and "always": nothing is synced in the background', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  for (const mode of ['never', 'always'] as const) {
    const sync = new FileSync(mode, 1000);
    const a = target();
    sync.written(a);
    t.mock.timers.tick(10_000);
    assert.equal(a.syncs, 0, mode);
    assert.equal(sync.tracks, mode === 'always', `${mode}: whether logs track what they owe`);
  }
});

test('log sync "interval": a sync that fails is logged naming the file and tried again at the next interval', async (t) => {
  await withTempDir(async (dir) => {
    // Only setTimeout is mocked: the commit rounds (setImmediate) and the file system run for real.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const logger = recordingLogger();
    const file = path.join(dir, 'logs', 'a.jsonl');
    const sync = new FileSync('interval', 100);
    const log = new JsonlLog<Rec>(file, logger, { resources: new LogResources(4, sync) });
    await log.append({ n: 1 });
    // The file's directory is owed a sync (the file is new); gone, its sync fails.
    await rm(path.dirname(file), { recursive: true });
    const failures = (): number => logger.lines.filter((l) => l.level === 'error').length;
    /** Turns of the event loop until `n` failures are logged (the sync runs on the thread pool). */
    const untilFailures = async (n: number): Promise<void> => {
      for (let turn = 0; turn < 1_000_000 && failures() < n; turn++) await new Promise((r) => setImmediate(r));
      assert.equal(failures(), n);
    };
    t.mock.timers.tick(100);
    await untilFailures(1);
    assert.match(logger.lines.find((l) => l.level === 'error')!.msg, /sync of .*a\.jsonl failed/);
    t.mock.timers.tick(100);
    await untilFailures(2);
    assert.equal(sync.waiting, 1, 'owed to the next interval');
    // Closing tries once more (logged), and leaves nothing waiting behind it.
    await log.close();
    assert.equal(failures(), 3);
    assert.equal(sync.waiting, 0);
  });
});
