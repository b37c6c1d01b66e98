// log/loop-writes.ts: small batches written on the event loop, and the pool after a slow write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  LOOP_WRITE_MAX_BYTES,
  LoopWrites,
  POOL_AFTER_SLOW_MS,
  SLOW_LOOP_WRITE_MS,
} from '../../../plugin/hosts/standalone/storage/log/loop-writes.ts';
import { withTempDir } from '../../helpers/storage-fixtures.ts';

test('loop writes: a small batch is written whole at the end of the file; a large one goes to the pool', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    const fd = openSync(file, 'a');
    try {
      const writes = new LoopWrites();
      assert.equal(writes.fits(LOOP_WRITE_MAX_BYTES), true);
      assert.equal(writes.fits(LOOP_WRITE_MAX_BYTES + 1), false);
      assert.equal(writes.write(fd, Buffer.from('{"n":1}\n')), undefined);
      assert.equal(writes.write(fd, Buffer.from('{"n":2}\n')), undefined);
      assert.equal(readFileSync(file, 'utf8'), '{"n":1}\n{"n":2}\n');
    } finally {
      closeSync(fd);
    }
  });
});

test('loop writes: after a slow write, every write goes to the pool until the pause has passed', async () => {
  await withTempDir(async (dir) => {
    const fd = openSync(path.join(dir, 'log.jsonl'), 'a');
    try {
      // The clock moves only when the test says; the slow one's second reading (the write's end) is late.
      let now = 1_000;
      const writes = new LoopWrites(() => now);
      let readings = 0;
      const slow = new LoopWrites(() => (readings++ === 1 ? (now += SLOW_LOOP_WRITE_MS + 1) : now));
      assert.equal(writes.write(fd, Buffer.from('a\n')), undefined, 'a write that took no time is not slow');
      assert.equal(slow.write(fd, Buffer.from('b\n')), SLOW_LOOP_WRITE_MS + 1);
      assert.equal(slow.fits(10), false, 'right after the slow write');
      now += POOL_AFTER_SLOW_MS - 1;
      assert.equal(slow.fits(10), false, 'just before the pause ends');
      now += 1;
      assert.equal(slow.fits(10), true, 'once it has passed');
      assert.equal(writes.fits(10), true, 'another storage keeps writing on its loop');
    } finally {
      closeSync(fd);
    }
  });
});
