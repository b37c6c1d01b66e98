// The transform runner's API through real worker threads (plugin/transforms/): modules of every kind,
// failures put into fixed reasons, time limits, hot reload and close. The pool's choices are
// transform-pool.test.ts, a worker's states transform-worker-slot.test.ts.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TransformRunner } from '../../plugin/transforms/index.ts';
import { waitUntil } from '../helpers/common.ts';
import {
  SECRET,
  call,
  collectingLogger,
  detail,
  failed,
  tmp,
  value,
  write,
  writeTransformModules,
} from '../helpers/transform-modules.ts';

describe('TransformRunner', () => {
  let f: (name: string) => string;
  let runner: TransformRunner;
  const logger = collectingLogger();

  before(() => {
    f = writeTransformModules(tmp('hookgate-transforms-'));
    runner = new TransformRunner({ timeoutMs: 300, workers: 2, logger });
  });

  after(async () => {
    await runner.close();
    assert.equal(runner.workerCount, 0);
  });

  test('loads TS, MTS, JS (ESM and CJS), MJS and CJS modules; default and named exports', async () => {
    assert.deepEqual(value(await runner.run(call(f('typed.ts'), 'default', { n: 7 }))), {
      text: 'demo:7:yes:1:1',
      kind: 'wake',
    });
    assert.deepEqual(value(await runner.run(call(f('typed.ts'), 'named', { n: 2 }))), { named: { n: 2 } });
    assert.deepEqual(value(await runner.run(call(f('mod.mts'), 'default', { n: 2 }))), { mts: 42 });
    assert.deepEqual(value(await runner.run(call(f('esm.js'), 'default', { n: 3 }))), { js: 3 });
    assert.deepEqual(value(await runner.run(call(f('esm.js'), 'other'))), { other: true });
    assert.deepEqual(value(await runner.run(call(f('esm.mjs')))), { mjs: 40 });
    assert.deepEqual(value(await runner.run(call(f('fn.cjs'), 'default', { n: 4 }))), { cjs: 4 });
    assert.deepEqual(value(await runner.run(call(f('named.cjs'), 'pick', { n: 5 }))), { picked: 5 });
    assert.deepEqual(value(await runner.run(call(f('object.cjs'), 'shaped'))), { shaped: true });
    assert.deepEqual(value(await runner.run(call(f('plain.js')))), { plainCjs: true });
  });

  test('async transforms and null (skip)', async () => {
    assert.deepEqual(value(await runner.run(call(f('async.ts'), 'default', { n: 9 }))), { later: 9 });
    assert.equal(value(await runner.run(call(f('null.ts')))), null);
  });

  test('throws and rejections fail with a generic reason; the message is a one-line detail; the worker survives', async () => {
    const before = runner.workerCount;
    const thrown = await runner.run(call(f('throws.ts'), 'default', { secret: SECRET }));
    assert.equal(failed(thrown), 'the transform threw an error');
    assert.equal(detail(thrown), 'bad things');
    const rejected = await runner.run(call(f('rejects.mjs')));
    assert.equal(failed(rejected), 'the transform threw an error');
    assert.equal(detail(rejected), 'nope, rejected');
    assert.equal(detail(await runner.run(call(f('throws-string.ts')))), 'plain string');
    const long = detail(await runner.run(call(f('throws-long.ts'))))!;
    assert.ok(long.startsWith('xxx'));
    assert.ok(long.length <= 200, `bounded: ${long.length}`);
    assert.equal(runner.workerCount, before, 'no worker was replaced');
    assert.deepEqual(value(await runner.run(call(f('null.ts')))), null);
  });

  test('bad return values, missing exports and load errors are clear reasons', async () => {
    assert.equal(
      failed(await runner.run(call(f('array.ts')))),
      'the transform returned an array, expected an object or null',
    );
    assert.equal(
      failed(await runner.run(call(f('string.ts')))),
      'the transform returned a string, expected an object or null',
    );
    assert.equal(
      failed(await runner.run(call(f('function.ts')))),
      'the transform returned a function, expected an object or null',
    );
    assert.equal(
      failed(await runner.run(call(f('undefined.ts')))),
      'the transform returned undefined, expected an object or null',
    );
    assert.equal(
      failed(await runner.run(call(f('map.ts')))),
      'the transform returned an object that is not a plain object, expected an object or null',
    );
    assert.match(failed(await runner.run(call(f('nested-fn.ts')))), /not plain JSON data/);
    assert.equal(failed(await runner.run(call(f('no-default.ts')))), 'the transform module has no export "default"');
    assert.equal(
      failed(await runner.run(call(f('typed.ts'), 'missing'))),
      'the transform module has no export "missing"',
    );
    assert.equal(
      failed(await runner.run(call(f('default-not-fn.ts')))),
      `the transform module's export "default" is an object, not a function`,
    );
    assert.equal(
      failed(await runner.run(call(f('named.cjs'), 'notFn'))),
      `the transform module's export "notFn" is a number, not a function`,
    );
    const syntax = await runner.run(call(f('syntax.ts')));
    assert.equal(failed(syntax), 'the transform module could not be loaded');
    assert.ok(detail(syntax) && !detail(syntax)!.includes('\n'));
    const loadThrows = await runner.run(call(f('load-throws.mjs')));
    assert.equal(failed(loadThrows), 'the transform module could not be loaded');
    assert.equal(detail(loadThrows), 'top-level failure');
    const gone = await runner.run(call(f('gone.ts')));
    assert.equal(failed(gone), 'the transform module could not be loaded');
    assert.match(detail(gone)!, /gone\.ts/);
    // A module that failed to load is retried next time (not cached as broken).
    write(f('fixed-later.ts'), 'export default (: ) => 1');
    assert.equal(failed(await runner.run(call(f('fixed-later.ts')))), 'the transform module could not be loaded');
    write(f('fixed-later.ts'), 'export default () => ({ fixed: true })');
    assert.deepEqual(value(await runner.run(call(f('fixed-later.ts')))), { fixed: true });
  });

  test('a promise that never settles times out', async () => {
    assert.equal(failed(await runner.run(call(f('never.ts')))), 'the transform timed out after 300 ms');
    assert.equal(value(await runner.run(call(f('null.ts')))), null);
  });

  test('unbounded allocation kills only the worker; the next call works', async () => {
    const oomRunner = new TransformRunner({ timeoutMs: 10_000, workers: 1, maxOldGenerationSizeMb: 32, logger });
    try {
      const reason = failed(await oomRunner.run(call(f('oom.ts'), 'default', { secret: SECRET })));
      assert.equal(reason, 'the transform used too much memory');
      assert.deepEqual(value(await oomRunner.run(call(f('async.ts'), 'default', { n: 1 }))), { later: 1 });
    } finally {
      await oomRunner.close();
    }
  });

  test('process.exit() in a transform ends only its worker', async () => {
    const exited = await runner.run(call(f('exit.ts')));
    assert.equal(failed(exited), 'the transform worker stopped unexpectedly');
    assert.equal(detail(exited), 'worker exited with code 1');
    assert.ok(process.uptime() > 0); // still here
    assert.deepEqual(value(await runner.run(call(f('async.ts'), 'default', { n: 2 }))), { later: 2 });
  });
  test('module load has its own budget; a module stuck at top level is stopped', async () => {
    write(f('top-loop.mjs'), 'for (;;) {}\nexport default () => null;\n');
    // Generous enough that a good module loads in time on a busy machine (a fresh worker plus jiti).
    const r = new TransformRunner({ timeoutMs: 200, workers: 1, loadTimeoutMs: 3000 });
    try {
      assert.equal(failed(await r.run(call(f('top-loop.mjs')))), 'the transform module did not load within 3 s');
      assert.equal(value(await r.run(call(f('null.ts')))), null);
    } finally {
      await r.close();
    }
  });

  test('setTimeoutMs applies to later calls', async () => {
    const r = new TransformRunner({ timeoutMs: 5000, workers: 1 });
    try {
      r.setTimeoutMs(150);
      assert.equal(failed(await r.run(call(f('never.ts')))), 'the transform timed out after 150 ms');
    } finally {
      await r.close();
    }
  });

  test('modules are cached per worker, and invalidate() makes changes visible', async () => {
    const r = new TransformRunner({ timeoutMs: 1000, workers: 1 });
    try {
      for (const [name, src] of [
        ['hot.ts', (v: number) => `export default (): { v: number } => ({ v: ${v} });\n`],
        ['hot.mjs', (v: number) => `export default () => ({ v: ${v} });\n`],
        ['hot.cjs', (v: number) => `module.exports = () => ({ v: ${v} });\n`],
        ['hot.js', (v: number) => `module.exports = () => ({ v: ${v} });\n`],
      ] as const) {
        write(f(name), src(1));
        assert.deepEqual(value(await r.run(call(f(name)))), { v: 1 }, name);
        write(f(name), src(2));
        assert.deepEqual(value(await r.run(call(f(name)))), { v: 1 }, `${name} is cached until invalidated`);
        r.invalidate();
        assert.deepEqual(value(await r.run(call(f(name)))), { v: 2 }, `${name} after invalidate`);
      }
      // A module's own imports are reloaded too, and invalidate() with no file forgets everything.
      write(f('helper.mjs'), 'export const word = "old";\n');
      write(f('uses-helper.ts'), 'import { word } from "./helper.mjs";\nexport default () => ({ word });\n');
      assert.deepEqual(value(await r.run(call(f('uses-helper.ts')))), { word: 'old' });
      write(f('helper.mjs'), 'export const word = "new";\n');
      r.invalidate();
      assert.deepEqual(value(await r.run(call(f('uses-helper.ts')))), { word: 'new' });
    } finally {
      await r.close();
    }
  });

  test('invalidate() during a call lets it finish, then retires its worker', async () => {
    const r = new TransformRunner({ timeoutMs: 1000, workers: 1 });
    try {
      await r.run(call(f('null.ts'))); // warm: worker up, TS compiler loaded
      // It says when it has started, and ends when told to.
      const startedMark = f('busy.started');
      const go = f('busy.go');
      write(
        f('busy.ts'),
        `import { existsSync, writeFileSync } from 'node:fs';\nexport default async () => { writeFileSync(${JSON.stringify(startedMark)}, ''); while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 5)); return { gen: 1 }; };\n`,
      );
      const first = r.run(call(f('busy.ts')));
      await waitUntil(() => fs.existsSync(startedMark), 'the call started');
      write(f('busy.ts'), 'export default async () => ({ gen: 2 });\n');
      r.invalidate();
      write(go, '');
      assert.deepEqual(value(await first), { gen: 1 });
      assert.deepEqual(value(await r.run(call(f('busy.ts')))), { gen: 2 });
    } finally {
      await r.close();
    }
  });

  test('close() ends running and queued calls and terminates workers', async () => {
    const r = new TransformRunner({ timeoutMs: 60_000, workers: 1, pipeline: 1 });
    await r.run(call(f('null.ts')));
    const running = r.run(call(f('never.ts')));
    const queued = r.run(call(f('null.ts')));
    assert.equal(r.workerCount, 1);
    await r.close();
    assert.equal(r.workerCount, 0);
    assert.equal(failed(await running), 'transform runner is closed');
    assert.equal(failed(await queued), 'transform runner is closed');
    assert.equal(failed(await r.run(call(f('null.ts')))), 'transform runner is closed');
  });

  test('reasons and logs never carry payload content', () => {
    assert.ok(logger.lines.length > 0, 'timeouts and crashes were logged');
    for (const line of logger.lines) assert.ok(!line.includes(SECRET), line);
  });
});

test('a process with a busy runner exits once close() is called; idle workers never hold it', async () => {
  const dir = tmp('hookgate-exit-');
  const runnerUrl = new URL('../../plugin/transforms/index.ts', import.meta.url).href;
  write(path.join(dir, 'never.ts'), 'export default () => new Promise(() => {});\n');
  write(path.join(dir, 'ok.ts'), 'export default () => ({ ok: 1 });\n');
  const script = write(
    path.join(dir, 'main.mts'),
    `import { TransformRunner } from ${JSON.stringify(runnerUrl)};
const ctx = { payload: {}, headers: {}, query: {}, path: 'p' };
const idle = new TransformRunner({ timeoutMs: 60000 });
const first = await idle.run({ file: ${JSON.stringify(path.join(dir, 'ok.ts'))}, exportName: 'default', ctx });
// 'idle' is never closed: its idle worker must not keep the process alive.
const busy = new TransformRunner({ timeoutMs: 60000 });
const pending = busy.run({ file: ${JSON.stringify(path.join(dir, 'never.ts'))}, exportName: 'default', ctx });
setTimeout(() => void busy.close(), 300);
console.log(JSON.stringify([first, await pending]));
`,
  );
  const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000); // only a process that hangs
  const code = await new Promise<number | null>((res) => child.on('close', res));
  clearTimeout(killer);
  assert.equal(code, 0, err);
  assert.deepEqual(JSON.parse(out.trim()), [
    { ok: true, value: { ok: 1 } },
    { ok: false, reason: 'transform runner is closed' },
  ]);
});
