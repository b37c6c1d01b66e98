// A transform worker's states (plugin/transforms/worker-slot.ts), watched through the runner's
// `workers` view with real worker threads: starting, loading, running, idle, retiring, and gone.
// Every wait is on a state, never on a guessed time.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { TransformRunner } from '../../plugin/transforms/index.ts';
import { waitUntil } from '../helpers/common.ts';
import {
  call,
  collectingLogger,
  failed,
  tmp,
  value,
  write,
  writeTransformModules,
} from '../helpers/transform-modules.ts';

describe('worker slot', () => {
  let f: (name: string) => string;
  const logger = collectingLogger();
  const states = (r: TransformRunner): string[] => r.workers.map((w) => w.state);

  before(() => {
    f = writeTransformModules(tmp('hookgate-slot-'));
  });

  /** A module whose calls run until `release()` (a file appears), then answer `result`. */
  function gated(name: string, result: Record<string, unknown>): { file: string; release(): void } {
    const go = f(`${name}.go`);
    const file = write(
      f(`${name}.ts`),
      `import { existsSync } from 'node:fs';\nexport default async () => { while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 5)); return ${JSON.stringify(result)}; };\n`,
    );
    return { file, release: () => void write(go, '') };
  }

  test('starting → idle → loading/running → idle, and a call that answers leaves it idle', async () => {
    const r = new TransformRunner({ timeoutMs: 3000, workers: 1, logger });
    try {
      const first = r.run(call(f('null.ts')));
      // The worker thread exists at once; its own files load before it says 'ready'.
      assert.deepEqual(states(r), ['starting']);
      assert.equal(value(await first), null);
      assert.deepEqual(states(r), ['idle']);
      const slot = gated('slot', { done: true });
      const busy = r.run(call(slot.file));
      assert.equal(r.workers[0]?.calls, 1);
      await waitUntil(() => r.workers[0]?.state === 'running', 'the call running');
      slot.release();
      assert.deepEqual(value(await busy), { done: true });
      assert.deepEqual(states(r), ['idle']);
      assert.equal(r.workers[0]?.calls, 0);
    } finally {
      await r.close();
    }
    assert.deepEqual(states(r), []);
  });

  test('a module stuck at top level keeps its worker loading until the load budget ends it', async () => {
    write(f('slot-top-loop.mjs'), 'for (;;) {}\nexport default () => null;\n');
    const r = new TransformRunner({ timeoutMs: 200, workers: 1, loadTimeoutMs: 3000, logger });
    try {
      const stuck = r.run(call(f('slot-top-loop.mjs')));
      await waitUntil(() => r.workers[0]?.state === 'loading', 'the worker loading the module');
      assert.equal(failed(await stuck), 'the transform module did not load within 3 s');
      assert.equal(r.workerCount, 0, 'the worker was terminated, and nothing waits for another');
    } finally {
      await r.close();
    }
  });

  test('invalidate() retires a busy worker: it takes no new call, ends after its own, and a fresh one serves', async () => {
    const r = new TransformRunner({ timeoutMs: 3000, workers: 1, logger });
    try {
      await r.run(call(f('null.ts')));
      const retiring = gated('retire', { old: true });
      const old = r.run(call(retiring.file));
      await waitUntil(() => r.workers[0]?.state === 'running', 'the call running');
      r.invalidate();
      assert.deepEqual(states(r), ['retiring']);
      // The pool is full (one worker, retiring): a new call waits rather than joining it.
      const next = r.run(call(f('fn.cjs'), 'default', { n: 6 }));
      assert.equal(r.queued, 1);
      retiring.release();
      assert.deepEqual(value(await old), { old: true });
      assert.deepEqual(value(await next), { cjs: 6 });
      assert.deepEqual(states(r), ['idle'], 'a fresh worker took the waiting call');
    } finally {
      await r.close();
    }
  });

  test('an idle worker with nothing to do is retired at once by invalidate()', async () => {
    const r = new TransformRunner({ timeoutMs: 3000, workers: 1, logger });
    try {
      await r.run(call(f('null.ts')));
      assert.deepEqual(states(r), ['idle']);
      r.invalidate();
      assert.deepEqual(states(r), []);
    } finally {
      await r.close();
    }
  });

  test('a worker idle for idleRetireMs is retired; one kept busy is not; the next call starts a fresh one', async () => {
    const idle = new TransformRunner({ timeoutMs: 3000, workers: 1, idleRetireMs: 1000, logger });
    try {
      assert.deepEqual(value(await idle.run(call(f('esm.js')))), { js: 1 });
      // Calls one after another for twice the idle time: the worker is never idle long enough, so the
      // one that answers the last call is the first (a module loaded once per worker keeps its count).
      const started = performance.now();
      let calls = 0;
      while (performance.now() - started < 2000) {
        assert.deepEqual(value(await idle.run(call(f('counting.ts')))), { calls: ++calls });
      }
      assert.equal(idle.workerCount, 1);
      assert.deepEqual(states(idle), ['idle']);
      const lastCall = performance.now();
      await waitUntil(() => idle.workerCount === 0, 'the idle worker retired');
      assert.ok(performance.now() - lastCall >= 990, 'not retired before 1 s idle');
      assert.deepEqual(value(await idle.run(call(f('esm.js'), 'default', { n: 2 }))), { js: 2 });
      assert.equal(idle.workerCount, 1);
    } finally {
      await idle.close();
    }
  });
});
