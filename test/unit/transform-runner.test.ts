// Transform modules: confinement of their paths (confine.ts) and the sandboxed worker pool that runs
// them (transform-runner.ts + transform-worker.mjs). Fixture modules are written to temp dirs here.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { confineDir, confineModule } from '../../plugin/transforms/index.ts';
import { TransformRunner, type TransformCall, type TransformOutcome } from '../../plugin/transforms/index.ts';
import { waitUntil } from '../helpers/common.ts';

const SECRET = 'PAYLOAD-SECRET-7f3a';
const tmpDirs: string[] = [];

function tmp(prefix: string): string {
  // realpath: on some systems the temp dir itself is reached through a symlink.
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  tmpDirs.push(dir);
  return dir;
}

function write(file: string, text: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

after(() => {
  for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true });
});

// --- confinement -------------------------------------------------------------------------------------

describe('confineModule', () => {
  let base: string; // holds root/ and outside/
  let root: string;
  let outside: string;
  const WHERE = 'hooks.mappings[2].transform.module';

  before(() => {
    base = tmp('hookgate-confine-');
    root = path.join(base, 'config', 'hooks', 'transforms');
    outside = path.join(base, 'outside');
    write(path.join(root, 'ok.ts'), 'export default () => null;\n');
    write(path.join(root, 'sub', 'ok.ts'), 'export default () => null;\n');
    write(path.join(root, 'data.json'), '{}');
    write(path.join(root, 'noext'), '');
    fs.mkdirSync(path.join(root, 'folder.ts'));
    write(path.join(outside, 'evil.ts'), 'export default () => ({ evil: true });\n');
    write(path.join(outside, 'secret.txt'), 'x');
    fs.symlinkSync(path.join(outside, 'evil.ts'), path.join(root, 'link-out.ts'));
    fs.symlinkSync(outside, path.join(root, 'dir-out'));
    fs.symlinkSync(path.join(root, 'sub', 'ok.ts'), path.join(root, 'link-in.ts'));
    fs.symlinkSync(path.join(root, 'data.json'), path.join(root, 'link-json.ts'));
    fs.symlinkSync(path.join(root, 'nowhere.ts'), path.join(root, 'dangling.ts'));
    fs.symlinkSync(outside, path.join(base, 'config', 'hooks', 'dir-link-out'));
    fs.mkdirSync(path.join(root, 'team'));
    fs.symlinkSync(outside, path.join(root, 'team', 'escape'));
  });

  async function refused(module: string, why: RegExp, dir = root): Promise<void> {
    await assert.rejects(confineModule(root, dir, module, WHERE), (err: Error) => {
      assert.ok(err.message.startsWith(`${WHERE} `), `names the key: ${err.message}`);
      assert.match(err.message, why);
      assert.ok(!err.message.includes('\n'), 'one line');
      return true;
    });
  }

  test('refuses paths spelled to escape', async () => {
    await refused('../x.ts', /"\.\."/);
    await refused('sub/../../x.ts', /"\.\."/);
    await refused('..', /"\.\."|extension/);
    await refused(path.join(outside, 'evil.ts'), /absolute path/);
    await refused('/x.ts', /absolute path/);
    await refused('~/x.ts', /"~"/);
    await refused('~root/x.ts', /"~"/);
    await refused('file:///x.ts', /URL/);
    await refused('http://x', /URL/);
    await refused('data:text/javascript,export default 1', /URL/);
    await refused('C:/x.ts', /URL or a drive/);
    await refused('ok\0.ts', /NUL byte/);
    await refused('sub\\ok.ts', /backslash/);
    await refused('..\\x.ts', /backslash/);
    await refused('', /non-empty/);
  });

  test('refuses missing files, non-files and wrong extensions', async () => {
    await refused('missing.ts', /does not exist/);
    await refused('nodir/missing.ts', /does not exist/);
    await refused('ok.ts/x.ts', /does not exist/);
    await refused('data.json', /extension "\.json"/);
    await refused('noext', /no extension/);
    await refused('ok.TS', /extension/);
    await refused('folder.ts', /not a regular file/);
    await refused('dangling.ts', /symlink whose target does not exist/);
    await refused('link-json.ts', /symlink to a file with the extension "\.json"/);
  });

  test('refuses symlinks (file, directory on the way, or the dir itself) that leave the root', async () => {
    await refused('link-out.ts', /symlink that points outside/);
    await refused('dir-out/evil.ts', /outside the transforms root/);
    await refused('team/escape/evil.ts', /outside the transforms root/);
    // `dir` itself is a symlink leading out.
    await refused('evil.ts', /outside the transforms root/, path.join(root, 'dir-out'));
    await refused('evil.ts', /outside the transforms root/, path.join(base, 'config', 'hooks', 'dir-link-out'));
  });

  test('accepts good paths and returns the real path', async () => {
    assert.equal(await confineModule(root, root, 'ok.ts', WHERE), path.join(root, 'ok.ts'));
    assert.equal(await confineModule(root, root, 'sub/ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    assert.equal(await confineModule(root, root, './sub/ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    assert.equal(await confineModule(root, path.join(root, 'sub'), 'ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    // A symlink that stays inside the root resolves to its target.
    assert.equal(await confineModule(root, root, 'link-in.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    // The root reached through a symlink is fine: comparisons use real paths.
    const viaLink = path.join(base, 'root-link');
    fs.symlinkSync(root, viaLink);
    assert.equal(await confineModule(viaLink, viaLink, 'sub/ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    for (const ext of ['.mts', '.js', '.mjs', '.cjs']) {
      write(path.join(root, `m${ext}`), '');
      assert.equal(await confineModule(root, root, `m${ext}`, WHERE), path.join(root, `m${ext}`));
    }
  });

  test('a missing root means a missing module', async () => {
    await assert.rejects(
      confineModule(path.join(base, 'nope'), path.join(base, 'nope'), 'x.ts', WHERE),
      /^Error: hooks\.mappings\[2\]\.transform\.module "x\.ts" does not exist/,
    );
  });
});

describe('confineDir', () => {
  let base: string;
  let root: string;
  const WHERE = 'hooks.transformsDir';

  before(() => {
    base = tmp('hookgate-confine-dir-');
    root = path.join(base, 'hooks', 'transforms');
    fs.mkdirSync(path.join(root, 'team-a', 'nested'), { recursive: true });
    fs.mkdirSync(path.join(base, 'outside'));
    write(path.join(root, 'file.ts'), '');
    fs.symlinkSync(path.join(base, 'outside'), path.join(root, 'out-link'));
    fs.symlinkSync(path.join(root, 'team-a'), path.join(root, 'in-link'));
  });

  async function refused(dir: string, why: RegExp, r = root): Promise<void> {
    await assert.rejects(confineDir(r, dir, WHERE), (err: Error) => {
      assert.ok(err.message.startsWith(`${WHERE} `), err.message);
      assert.match(err.message, why);
      return true;
    });
  }

  test('accepts the root and folders inside it, returning real paths', async () => {
    assert.equal(await confineDir(root, root, WHERE), root);
    assert.equal(await confineDir(root, path.join(root, 'team-a'), WHERE), path.join(root, 'team-a'));
    assert.equal(await confineDir(root, 'team-a/nested', WHERE), path.join(root, 'team-a', 'nested'));
    assert.equal(await confineDir(root, path.join(root, 'in-link'), WHERE), path.join(root, 'team-a'));
  });

  test('a missing directory is allowed only when it is the root itself', async () => {
    const missingRoot = path.join(base, 'no-config', 'hooks', 'transforms');
    assert.equal(await confineDir(missingRoot, missingRoot, WHERE), missingRoot);
    await refused(path.join(missingRoot, 'team'), /does not exist/, missingRoot);
    await refused(path.join(root, 'team-b'), /does not exist/);
  });

  test('refuses directories outside the root, by spelling or through symlinks', async () => {
    await refused(path.join(base, 'outside'), /must stay inside/);
    await refused('../outside', /must stay inside/);
    await refused(path.join(root, 'out-link'), /outside the transforms root/);
    await refused(path.join(root, 'file.ts'), /not a directory/);
    await refused('team\0', /NUL byte/);
    await refused('team\\a', /backslash/);
    await refused('~/x', /"~"/);
    await refused('file:///etc', /URL/);
  });

  test('confineModule refuses a module when transformsDir is a symlink leading out', async () => {
    write(path.join(base, 'outside', 'x.ts'), '');
    await assert.rejects(confineModule(root, path.join(root, 'out-link'), 'x.ts', 'm'), /outside the transforms root/);
  });
});

// --- runner ------------------------------------------------------------------------------------------

function ctx(payload: Record<string, unknown> = { n: 1 }): TransformCall['ctx'] {
  return { payload, headers: { 'x-test': 'yes' }, query: { q: '1' }, path: 'demo' };
}

function call(file: string, exportName = 'default', payload?: Record<string, unknown>): TransformCall {
  return { file, exportName, ctx: ctx(payload) };
}

function failed(outcome: TransformOutcome): string {
  assert.equal(outcome.ok, false, `expected a failure, got ${JSON.stringify(outcome)}`);
  return (outcome as { reason: string }).reason;
}

/** What the transform said, kept beside the reason for operator tools. */
function detail(outcome: TransformOutcome): string | undefined {
  assert.equal(outcome.ok, false, `expected a failure, got ${JSON.stringify(outcome)}`);
  return (outcome as { detail?: string }).detail;
}

function value(outcome: TransformOutcome): Record<string, unknown> | null {
  assert.equal(outcome.ok, true, `expected success, got ${JSON.stringify(outcome)}`);
  return (outcome as { value: Record<string, unknown> | null }).value;
}

function collectingLogger(): { lines: string[]; warn(msg: string, fields?: Record<string, unknown>): void } {
  const lines: string[] = [];
  return { lines, warn: (msg, fields) => void lines.push(`${msg} ${JSON.stringify(fields ?? {})}`) };
}

describe('TransformRunner', () => {
  let dir: string;
  let runner: TransformRunner;
  const logger = collectingLogger();
  const f = (name: string): string => path.join(dir, name);

  before(() => {
    dir = tmp('hookgate-transforms-');
    write(
      f('typed.ts'),
      `interface Ctx { payload: Record<string, unknown>; headers: Record<string, string>; query: Record<string, string>; path: string }
type Out = { text: string; kind: 'wake' };
enum Level { Low = 1 }
export default function transform(ctx: Ctx): Out {
  const n = ctx.payload.n as number;
  return { text: \`\${ctx.path}:\${n}:\${ctx.headers['x-test']}:\${ctx.query.q}:\${Level.Low}\`, kind: 'wake' } satisfies Out;
}
export const named = <T,>(ctx: { payload: T }): { named: T } => ({ named: ctx.payload });
`,
    );
    write(
      f('mod.mts'),
      `const base: number = await Promise.resolve(40);\nexport default (ctx: { payload: { n: number } }) => ({ mts: base + ctx.payload.n });\n`,
    );
    write(
      f('esm.js'),
      `export default function (ctx) { return { js: ctx.payload.n } }\nexport function other() { return { other: true } }\n`,
    );
    write(
      f('esm.mjs'),
      `import { createHash } from 'node:crypto';\nexport default (ctx) => ({ mjs: createHash('sha1').update(String(ctx.payload.n)).digest('hex').length });\n`,
    );
    write(f('fn.cjs'), `module.exports = function (ctx) { return { cjs: ctx.payload.n } };\n`);
    write(f('named.cjs'), `exports.pick = (ctx) => ({ picked: ctx.payload.n });\nexports.notFn = 42;\n`);
    write(f('object.cjs'), `module.exports = { shaped: (ctx) => ({ shaped: true }) };\n`);
    write(f('plain.js'), `module.exports = (ctx) => ({ plainCjs: true });\n`);
    write(
      f('async.ts'),
      `export default async (ctx: { payload: { n: number } }) => { await new Promise((r) => setTimeout(r, 20)); return { later: ctx.payload.n }; };\n`,
    );
    write(f('null.ts'), `export default () => null;\n`);
    write(f('counting.ts'), `let calls = 0;\nexport default () => ({ calls: ++calls });\n`);
    write(
      f('throws.ts'),
      `export default (ctx: any) => { throw new Error('bad things\\nsecond line with ' + JSON.stringify(ctx.payload)); };\n`,
    );
    write(f('throws-long.ts'), `export default () => { throw new TypeError('x'.repeat(1000)); };\n`);
    write(f('throws-string.ts'), `export default () => { throw 'plain string'; };\n`);
    write(f('rejects.mjs'), `export default async () => { await null; throw new RangeError('nope, rejected'); };\n`);
    write(f('loop.ts'), `export default () => { for (;;) {} };\n`);
    write(f('never.ts'), `export default () => new Promise(() => {});\n`);
    write(f('quick-async.ts'), `export default async () => { await null; return { quick: true }; };\n`);
    // Finishes only once four calls of it have started in its worker: calls run one after another never do.
    write(
      f('four-together.ts'),
      `export default async (ctx: { payload: { n: number } }) => { const g = globalThis as { together?: number }; g.together = (g.together ?? 0) + 1; while (g.together < 4) await new Promise((r) => setTimeout(r, 5)); return { later: ctx.payload.n }; };\n`,
    );
    write(
      f('oom.ts'),
      `export default () => { const keep: unknown[] = []; for (;;) keep.push({ a: new Array(4096).fill(Math.random()) }); };\n`,
    );
    write(f('exit.ts'), `export default () => { process.exit(1); };\n`);
    write(f('array.ts'), `export default () => [1, 2];\n`);
    write(f('string.ts'), `export default () => 'text';\n`);
    write(f('function.ts'), `export default () => () => 1;\n`);
    write(f('undefined.ts'), `export default () => undefined;\n`);
    write(f('map.ts'), `export default () => new Map();\n`);
    write(f('nested-fn.ts'), `export default () => ({ text: 'x', cb: () => 1 });\n`);
    write(f('syntax.ts'), `export default (ctx: ) => {;\n`);
    write(f('load-throws.mjs'), `throw new Error('top-level failure');\nexport default () => null;\n`);
    write(f('no-default.ts'), `export const something = () => null;\n`);
    write(f('default-not-fn.ts'), `export default { text: 'hi' };\n`);
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
      const lastCall = performance.now();
      await waitUntil(() => idle.workerCount === 0, 'the idle worker retired');
      assert.ok(performance.now() - lastCall >= 990, 'not retired before 1 s idle');
      assert.deepEqual(value(await idle.run(call(f('esm.js'), 'default', { n: 2 }))), { js: 2 });
      assert.equal(idle.workerCount, 1);
    } finally {
      await idle.close();
    }
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
      // A worker counts as stalled once it has said nothing for STALL_MS (100 ms) while running a
      // call: that silence, from the loop's start, is the condition under test, so it is waited out.
      await new Promise((r) => setTimeout(r, 200));
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
      await piped.run(call(f('null.ts'))); // warm
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
