// The pool of transform workers (plugin/transforms/pool.ts) through real worker threads: which worker
// a call goes to, a second worker for a hog, the bounded queue, pipelining and what a deadline takes.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { TransformRunner } from '../../plugin/transforms/index.ts';
import { waitUntil } from '../helpers/common.ts';
import {
  SECRET,
  call,
  collectingLogger,
  failed,
  tmp,
  value,
  write,
  writeTransformModules,
} from '../helpers/transform-modules.ts';

describe('worker pool', () => {
  let f: (name: string) => string;
  const logger = collectingLogger();

  before(() => {
    f = writeTransformModules(tmp('hookgate-pool-'));
  });

  test('a transform that hogs its worker gets a second one started for the calls after it', async () => {
    const pool = new TransformRunner({ timeoutMs: 3000, workers: 2, logger });
    try {
      // A steady load of quick calls is served by one worker.
      await Promise.all([1, 2, 3, 4].map((n) => pool.run(call(f('typed.ts'), 'default', { n }))));
      assert.equal(pool.workerCount, 1);
      const order: string[] = [];
      const t0 = performance.now();
      const looping = f('loop.started');
      write(
        f('marked-loop.ts'),
        `import { writeFileSync } from 'node:fs';\nexport default () => { writeFileSync(${JSON.stringify(looping)}, ''); for (;;) {} };\n`,
      );
      const stuck = pool
        .run(call(f('marked-loop.ts'), 'default', { secret: SECRET }))
        .finally(() => order.push('stuck'));
      await waitUntil(() => fs.existsSync(looping), 'the loop running');
      // A worker counts as stalled once it has said nothing for a while running a call: waited for.
      await waitUntil(() => pool.workers.some((w) => w.stalled), 'the looping worker stalled');
      assert.deepEqual(
        pool.workers.map((w) => w.state),
        ['running'],
      );
      const good = await pool.run(call(f('fn.cjs'), 'default', { n: 1 })).finally(() => order.push('good'));
      assert.equal(good.ok, true);
      assert.equal(pool.workerCount, 2);
      assert.deepEqual(
        order,
        ['good'],
        `the good call finished while the loop ran (${(performance.now() - t0).toFixed(0)} ms)`,
      );
      assert.equal(failed(await stuck), 'the transform timed out after 3 s');
      const stuckMs = performance.now() - t0;
      assert.ok(stuckMs >= 2990, `not stopped before its deadline (${stuckMs.toFixed(0)} ms)`);
      // The stuck worker was replaced; everything still works.
      assert.deepEqual(value(await pool.run(call(f('fn.cjs'), 'default', { n: 1 }))), { cjs: 1 });
    } finally {
      await pool.close();
    }
  });
  test('a stuck worker is killed at its deadline so queued calls move on; the queue is bounded', async () => {
    const small = new TransformRunner({ timeoutMs: 300, workers: 1, maxQueue: 1, pipeline: 1 });
    try {
      await small.run(call(f('null.ts'))); // warm
      const stuck = small.run(call(f('loop.ts')));
      const queued = small.run(call(f('fn.cjs'), 'default', { n: 8 }));
      assert.equal(small.queued, 1);
      assert.equal(failed(await small.run(call(f('null.ts')))), 'transform queue is full');
      assert.equal(failed(await stuck), 'the transform timed out after 300 ms');
      assert.deepEqual(value(await queued), { cjs: 8 });
    } finally {
      await small.close();
    }
  });

  test('pipelined calls behind a stuck one go to a fresh worker; the queue bound counts what waits in the runner', async () => {
    const piped = new TransformRunner({ timeoutMs: 300, workers: 1, maxQueue: 1, pipeline: 3, logger });
    try {
      // The loop's module loaded first: on a busy machine the calls behind it loaded theirs first,
      // and ran before the loop began.
      await piped.run(call(f('loop.ts'), 'ready'));
      const order: string[] = [];
      const stuck = piped.run(call(f('loop.ts'), 'default', { secret: SECRET })).finally(() => order.push('stuck'));
      // Handed to the same worker behind the loop: never started there.
      const behind = [1, 2].map((n) =>
        piped.run(call(f('fn.cjs'), 'default', { n })).finally(() => order.push(`behind ${n}`)),
      );
      const waiting = piped.run(call(f('fn.cjs'), 'default', { n: 3 }));
      assert.equal(piped.queued, 1);
      assert.equal(failed(await piped.run(call(f('null.ts')))), 'transform queue is full');
      assert.equal(failed(await stuck), 'the transform timed out after 300 ms');
      assert.deepEqual(await Promise.all(behind.map(async (p) => value(await p))), [{ cjs: 1 }, { cjs: 2 }]);
      assert.deepEqual(value(await waiting), { cjs: 3 });
      assert.deepEqual(order, ['stuck', 'behind 1', 'behind 2']);
      assert.equal(piped.workerCount, 1);
    } finally {
      await piped.close();
    }
  });

  test('a pipelined worker overlaps async calls; one that runs out of time takes the calls it had started with it', async () => {
    const piped = new TransformRunner({ timeoutMs: 300, workers: 1, pipeline: 4, logger });
    try {
      await piped.run(call(f('null.ts'))); // warm
      // Four async calls on one worker run at the same time: each waits for all four to have started.
      const results = await Promise.all(
        [1, 2, 3, 4].map((n) => piped.run(call(f('four-together.ts'), 'default', { n }))),
      );
      assert.deepEqual(
        results.map(value),
        [1, 2, 3, 4].map((n) => ({ later: n })),
      );
      const never = piped.run(call(f('never.ts')));
      const started = piped.run(call(f('quick-async.ts'))); // overlaps the first and ends before its deadline
      const late = piped.run(call(f('never.ts'))); // started, still running when the first runs out
      assert.equal(failed(await never), 'the transform timed out after 300 ms');
      assert.deepEqual(value(await started), { quick: true });
      assert.equal(failed(await late), 'the transform was stopped with its worker: another call on it ran out of time');
      assert.equal(value(await piped.run(call(f('null.ts')))), null);
    } finally {
      await piped.close();
    }
  });

  test('logs never carry payload content', () => {
    assert.ok(logger.lines.length > 0, 'timeouts were logged');
    for (const line of logger.lines) assert.ok(!line.includes(SECRET), line);
  });
});
