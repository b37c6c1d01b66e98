// A transform worker that cannot start (its file or one of its imports missing, as when a host copies
// only part of the package) says why in the log; the call fails with the fixed crash reason.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { TransformRunner as Runner } from '../../plugin/transforms/index.ts';

const PLUGIN = path.resolve(import.meta.dirname, '..', '..', 'plugin');
const WORKER_FILES = ['transform-worker.mjs', 'off-heap-watch.mjs', 'output-size.mjs'];
const SECRET = 'PAYLOAD-SECRET-5c1d';
const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hookgate-worker-start-')));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The sandbox copied into `into` (plugin/transforms and the util it uses) with only the given worker files. */
async function runnerWith(into: string, workerFiles: string[]): Promise<typeof Runner> {
  fs.cpSync(path.join(PLUGIN, 'util'), path.join(into, 'util'), { recursive: true });
  const transforms = path.join(into, 'transforms');
  fs.cpSync(path.join(PLUGIN, 'transforms'), transforms, {
    recursive: true,
    filter: (from) => !WORKER_FILES.includes(path.basename(from)) || workerFiles.includes(path.basename(from)),
  });
  const mod = (await import(pathToFileURL(path.join(transforms, 'index.ts')).href)) as {
    TransformRunner: typeof Runner;
  };
  return mod.TransformRunner;
}

function collectingLogger(): { lines: string[]; warn(msg: string, fields?: Record<string, unknown>): void } {
  const lines: string[] = [];
  return { lines, warn: (msg, fields) => void lines.push(`${msg} ${JSON.stringify(fields ?? {})}`) };
}

const transform = path.join(dir, 'ok.mjs');
fs.writeFileSync(transform, 'export default (ctx) => ({ text: String(ctx.payload.n) });\n');
const call = {
  file: transform,
  exportName: 'default',
  ctx: { payload: { n: 1, secret: SECRET }, headers: {}, query: {}, path: 'x' },
};

// Copied outside the checkout: `deps` sees the project's node_modules (through a link), the other not.
const deps = path.join(dir, 'deps');
fs.mkdirSync(deps);
fs.symlinkSync(path.resolve(PLUGIN, '..', 'node_modules'), path.join(deps, 'node_modules'), 'dir');
for (const [name, folder, files, said] of [
  ['the worker file', path.join(deps, 'none'), [], /Cannot find module .*transform-worker\.mjs/],
  [
    'a helper the worker imports',
    path.join(deps, 'no-helper'),
    ['transform-worker.mjs', 'off-heap-watch.mjs'],
    /Cannot find module .*output-size\.mjs/,
  ],
  [
    'jiti',
    path.join(dir, 'no-jiti'),
    ['transform-worker.mjs', 'off-heap-watch.mjs', 'output-size.mjs'],
    /Cannot find package 'jiti'/,
  ],
] as const) {
  test(`missing ${name}: the log names it, the call fails with the crash reason, no payload logged`, async () => {
    const TransformRunner = await runnerWith(folder, [...files]);
    const logger = collectingLogger();
    const runner = new TransformRunner({ timeoutMs: 2000, workers: 1, logger });
    try {
      const outcome = await runner.run(call);
      assert.equal(outcome.ok, false);
      assert.equal(!outcome.ok && outcome.reason, 'the transform crashed its worker');
      const line = logger.lines.find((l) => l.startsWith('transform worker could not start'));
      assert.ok(line, logger.lines.join('\n'));
      assert.match(line, said);
      assert.ok(!logger.lines.some((l) => l.includes(SECRET)));
    } finally {
      await runner.close();
    }
  });
}

test('a worker that started and then crashes is not reported as unable to start', async () => {
  const crash = path.join(dir, 'crash.mjs');
  fs.writeFileSync(
    crash,
    'export default (ctx) => { setTimeout(() => { throw new Error(ctx.payload.secret); }); return new Promise(() => {}); };\n',
  );
  const logger = collectingLogger();
  const runner = new Runner({ timeoutMs: 5000, workers: 1, logger });
  try {
    const ok = await runner.run(call);
    assert.deepEqual(ok, { ok: true, value: { text: '1' } });
    const crashed = await runner.run({ ...call, file: crash });
    assert.equal(!crashed.ok && crashed.reason, 'the transform crashed its worker');
    assert.ok(!logger.lines.some((l) => l.startsWith('transform worker could not start')), logger.lines.join('\n'));
    assert.ok(!logger.lines.some((l) => l.includes(SECRET)));
  } finally {
    await runner.close();
  }
});
