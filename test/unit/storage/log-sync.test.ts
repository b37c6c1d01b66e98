// storage.fsync's background sync (log-sync.ts), on mocked timers: under "interval" every log
// written since the first unsynced write is synced once, an interval after that write; "never" and
// "always" schedule nothing here ("always" syncs in the log's own round:
// test/process/storage-fsync.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LogSync, type SyncTarget } from '../../../plugin/hosts/standalone/storage/log/log-sync.ts';

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
  const sync = new LogSync('interval', 1000);
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
    const sync = new LogSync(mode, 1000);
    const a = target();
    sync.written(a);
    t.mock.timers.tick(10_000);
    assert.equal(a.syncs, 0, mode);
    assert.equal(sync.tracks, mode === 'always', `${mode}: whether logs track what they owe`);
  }
});
