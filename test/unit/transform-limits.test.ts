// Limits on what a transform may do beyond time and heap, through real worker threads and real files:
// off-heap memory (Buffers, ArrayBuffers, WebAssembly memories), the size of what it returns, a module
// path that is swapped for a symlink or a hard link after it was checked, and error texts that must
// not leak into reasons or logs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, realpathSync } from 'node:fs';
import { link, mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { confineModule } from '../../plugin/transforms/index.ts';
import { TransformRunner, type TransformCall, type TransformOutcome } from '../../plugin/transforms/index.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const MB = 1024 * 1024;
const CANARY = 'CANARY-4111111111111111-sk_live_7e1d';

async function realTemp(prefix: string): Promise<string> {
  return realpathSync(await tempDir(prefix));
}

function call(file: string, payload: Record<string, unknown> = {}, maxOutputBytes?: number): TransformCall {
  return { file, exportName: 'default', ctx: { payload, headers: {}, query: {}, path: 'limits' }, maxOutputBytes };
}

function failure(outcome: TransformOutcome): { reason: string; detail?: string } {
  assert.equal(outcome.ok, false, `expected a failure, got ${JSON.stringify(outcome).slice(0, 300)}`);
  return outcome as { reason: string; detail?: string };
}

function value(outcome: TransformOutcome): Record<string, unknown> | null {
  assert.equal(outcome.ok, true, `expected success, got ${JSON.stringify(outcome)}`);
  return (outcome as { value: Record<string, unknown> | null }).value;
}

function collectingLogger(): { lines: string[]; warn(msg: string, fields?: Record<string, unknown>): void } {
  const lines: string[] = [];
  return { lines, warn: (msg, fields) => void lines.push(`${msg} ${JSON.stringify(fields ?? {})}`) };
}

const rss = (): number => process.memoryUsage.rss();

describe('off-heap memory', () => {
  let dir: string;
  const f = (name: string): string => path.join(dir, name);

  before(async () => {
    dir = await realTemp('hookgate-offheap-');
    // Each call keeps 256 MB more, touched (so it is real memory), in module state the worker retains.
    await writeFile(
      f('hoard-buffer.mjs'),
      'const kept = [];\nexport default () => { kept.push(Buffer.alloc(256 * 1024 * 1024, 1)); return { n: kept.length }; };\n',
    );
    await writeFile(
      f('hoard-arraybuffer.mjs'),
      'const kept = [];\nexport default () => { const b = new ArrayBuffer(256 * 1024 * 1024); new Uint8Array(b).fill(1); kept.push(b); return { n: kept.length }; };\n',
    );
    // All of it in one call, never yielding: the worker cannot watch itself meanwhile.
    await writeFile(
      f('burst.mjs'),
      'export default () => { const kept = []; for (let i = 0; i < 8; i++) kept.push(Buffer.alloc(256 * 1024 * 1024, 1)); return { n: kept.length }; };\n',
    );
    // The same over several turns of the worker's event loop.
    await writeFile(
      f('creep.mjs'),
      'export default async () => { const kept = []; for (let i = 0; i < 16; i++) { kept.push(Buffer.alloc(64 * 1024 * 1024, 1)); await new Promise((r) => setTimeout(r, 20)); } return { n: kept.length }; };\n',
    );
    // Large temporaries dropped at once: garbage, not a hoard.
    await writeFile(
      f('churn.mjs'),
      'export default () => { const b = Buffer.allocUnsafe(30 * 1024 * 1024).fill(7); return { sum: b[0] + b[b.length - 1] }; };\n',
    );
    // WebAssembly memory is off the heap too: a new 16 MB memory kept per call, and one memory grown.
    await writeFile(
      f('hoard-wasm.mjs'),
      'const kept = [];\nexport default () => { const m = new WebAssembly.Memory({ initial: 256 }); new Uint8Array(m.buffer).fill(1); kept.push(m); return { n: kept.length }; };\n',
    );
    await writeFile(
      f('grow-wasm.mjs'),
      'const m = new WebAssembly.Memory({ initial: 1 });\nexport default () => { m.grow(256); new Uint8Array(m.buffer).fill(1); return { mb: m.buffer.byteLength >> 20 }; };\n',
    );
    await writeFile(f('ok.mjs'), 'export default () => ({ ok: true });\n');
  });

  test('WebAssembly memory counts: kept or grown across calls that each answer, the worker stops at the limit', async () => {
    for (const file of ['hoard-wasm.mjs', 'grow-wasm.mjs']) {
      const runner = new TransformRunner({ timeoutMs: 10_000, workers: 1 });
      try {
        // 16 MB a call against the default 64 MB: the fifth call at the latest is over.
        let answered = 0;
        let outcome = await runner.run(call(f(file)));
        while (outcome.ok && answered < 10) {
          answered++;
          outcome = await runner.run(call(f(file)));
        }
        assert.equal(failure(outcome).reason, 'the transform used too much memory', file);
        assert.ok(answered <= 4, `${file}: ${answered} calls answered before the stop`);
        // A fresh worker starts from nothing.
        assert.ok(value(await runner.run(call(f(file)))), file);
      } finally {
        await runner.close();
      }
    }
  });

  test('a transform hoarding 256 MB per call fails, its worker is replaced, and RSS does not keep growing', async () => {
    const logger = collectingLogger();
    const runner = new TransformRunner({ timeoutMs: 10_000, workers: 1, logger });
    try {
      assert.deepEqual(value(await runner.run(call(f('ok.mjs')))), { ok: true });
      const start = rss();
      for (const file of [
        'hoard-buffer.mjs',
        'hoard-arraybuffer.mjs',
        'hoard-buffer.mjs',
        'hoard-arraybuffer.mjs',
        'hoard-buffer.mjs',
        'hoard-arraybuffer.mjs',
      ]) {
        assert.equal(failure(await runner.run(call(f(file)))).reason, 'the transform used too much memory', file);
        // Loose: one hoard may still be on its way out; six of them kept would be 1.5 GB.
        const grown = (rss() - start) / MB;
        assert.ok(grown < 600, `RSS grew by ${grown.toFixed(0)} MB after ${file}`);
      }
      assert.deepEqual(value(await runner.run(call(f('ok.mjs')))), { ok: true });
      assert.ok(
        logger.lines.some((l) => l.includes('too much memory')),
        'the stop is logged',
      );
    } finally {
      await runner.close();
    }
  });

  test('a call allocating 2 GB without yielding is stopped on the way (RSS watched from outside the worker)', async () => {
    const runner = new TransformRunner({ timeoutMs: 20_000, workers: 1 });
    try {
      assert.deepEqual(value(await runner.run(call(f('ok.mjs')))), { ok: true });
      const start = rss();
      let peak = start;
      const sampler = setInterval(() => (peak = Math.max(peak, rss())), 10);
      const outcome = await runner.run(call(f('burst.mjs')));
      clearInterval(sampler);
      assert.equal(failure(outcome).reason, 'the transform used too much memory');
      const grown = (peak - start) / MB;
      assert.ok(grown < 1024, `RSS peaked ${grown.toFixed(0)} MB above the start`);
      assert.deepEqual(value(await runner.run(call(f('ok.mjs')))), { ok: true });
    } finally {
      await runner.close();
    }
  });

  test('an async transform allocating between awaits is stopped too; the limit is an option', async () => {
    const runner = new TransformRunner({ timeoutMs: 20_000, workers: 1, maxOffHeapMb: 100 });
    try {
      assert.equal(failure(await runner.run(call(f('creep.mjs')))).reason, 'the transform used too much memory');
      assert.deepEqual(value(await runner.run(call(f('ok.mjs')))), { ok: true });
    } finally {
      await runner.close();
    }
  });

  test('large temporaries that are dropped are garbage, not a reason to stop the worker', async () => {
    const runner = new TransformRunner({ timeoutMs: 10_000, workers: 1 });
    try {
      for (let i = 0; i < 20; i++)
        assert.deepEqual(value(await runner.run(call(f('churn.mjs')))), { sum: 14 }, `call ${i}`);
      assert.equal(runner.workerCount, 1);
    } finally {
      await runner.close();
    }
  });
});

describe('output size', () => {
  let dir: string;
  let runner: TransformRunner;
  const f = (name: string): string => path.join(dir, name);

  before(async () => {
    dir = await realTemp('hookgate-output-');
    await writeFile(f('huge-text.mjs'), "export default () => ({ action: 'wake', text: 'x'.repeat(100_000_000) });\n");
    await writeFile(f('echo.mjs'), 'export default (ctx) => ctx.payload.value;\n');
    await writeFile(
      f('many-keys.mjs'),
      'export default () => { const o = {}; for (let i = 0; i < 40_000; i++) o[`k${i}`] = i; return o; };\n',
    );
    await writeFile(f('cycle.mjs'), 'export default () => { const o = { text: "loop" }; o.self = o; return o; };\n');
    await writeFile(f('sparse.mjs'), 'export default () => { const a = []; a[1e9] = 1; return { a }; };\n');
    await writeFile(f('date.mjs'), 'export default () => ({ at: new Date(0) });\n');
    runner = new TransformRunner({ timeoutMs: 10_000, workers: 1 });
  });

  after(async () => {
    await runner.close();
  });

  test('a 100-million-character text fails with the bounded-output reason (default 262144 bytes)', async () => {
    const cpu = process.cpuUsage(); // the worker is a thread of this process: its CPU counts here
    assert.equal(
      failure(await runner.run(call(f('huge-text.mjs')))).reason,
      'the transform returned more than 262144 bytes',
    );
    const { user, system } = process.cpuUsage(cpu);
    assert.ok((user + system) / 1000 < 4000, `${((user + system) / 1e6).toFixed(1)} s of CPU`);
    assert.deepEqual(value(await runner.run(call(f('echo.mjs'), { value: { text: 'small' } }))), { text: 'small' });
  });

  test('the limit is the caller’s, and it counts the JSON bytes exactly', async () => {
    const samples: Record<string, unknown>[] = [
      { text: 'a'.repeat(1000) },
      { text: 'é€😀\n"\\\u0001', message: 'x', deliver: true, timeoutSeconds: 12.5, none: null },
      { list: [1, 'two', [3, { four: false }], null], empty: {}, nothing: [] },
      { 'kéy "quoted"': 'v', n: -0.000123, big: 1e21 },
    ];
    for (const sample of samples) {
      const bytes = Buffer.byteLength(JSON.stringify(sample));
      assert.deepEqual(
        value(await runner.run(call(f('echo.mjs'), { value: sample }, bytes))),
        sample,
        `${bytes} bytes fit in ${bytes}`,
      );
      assert.equal(
        failure(await runner.run(call(f('echo.mjs'), { value: sample }, bytes - 1))).reason,
        `the transform returned more than ${bytes - 1} bytes`,
      );
    }
    // Members holding undefined are left out, as JSON leaves them out.
    assert.deepEqual(value(await runner.run(call(f('echo.mjs'), { value: { text: 'a', gone: undefined } }, 12))), {
      text: 'a',
      gone: undefined,
    });
  });

  test('many keys, a cycle or a sparse array end at the limit; non-JSON values are refused', async () => {
    assert.equal(
      failure(await runner.run(call(f('many-keys.mjs')))).reason,
      'the transform returned more than 262144 bytes',
    );
    assert.equal(
      failure(await runner.run(call(f('cycle.mjs')))).reason,
      'the transform returned more than 262144 bytes',
    );
    assert.equal(
      failure(await runner.run(call(f('sparse.mjs')))).reason,
      'the transform returned more than 262144 bytes',
    );
    assert.match(failure(await runner.run(call(f('date.mjs')))).reason, /not plain JSON data/);
  });
});

describe('a module path swapped for a symlink after it was checked', () => {
  let root: string;
  let outside: string;
  let canary: string;
  const evil = (): string =>
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(canary)}, 'loaded');\nexport default () => ({ text: 'evil' });\n`;

  before(async () => {
    const base = await realTemp('hookgate-swap-');
    root = path.join(base, 'hooks', 'transforms');
    outside = path.join(base, 'outside');
    canary = path.join(base, 'canary.txt');
    await mkdir(path.join(root, 'team'), { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(path.join(outside, 'say.mjs'), evil());
    await writeFile(path.join(root, 'say.mjs'), "export default () => ({ text: 'mine' });\n");
    await writeFile(path.join(root, 'team', 'say.mjs'), "export default () => ({ text: 'team' });\n");
  });

  test('the file itself replaced by a symlink leading out: refused, the outside code never runs', async () => {
    const logger = collectingLogger();
    const runner = new TransformRunner({ timeoutMs: 2000, workers: 1, logger });
    try {
      const file = await confineModule(root, root, 'say.mjs', 'hooks.mappings[0].transform.module');
      assert.deepEqual(value(await runner.run(call(file))), { text: 'mine' });
      // Swapped atomically, as an attacker with write access to the folder would.
      await symlink(path.join(outside, 'say.mjs'), path.join(root, 'say.tmp'));
      await rename(path.join(root, 'say.tmp'), path.join(root, 'say.mjs'));
      // The watcher saw a change: workers are retired so the next call loads afresh (the reload that
      // re-checks the config is refused, so the old path stays in force).
      runner.invalidate();
      const refused = failure(await runner.run(call(file)));
      assert.match(refused.reason, /^the transform module was not loaded: its path now leads somewhere else/);
      assert.ok(!refused.reason.includes(outside), 'the reason names no path');
      assert.equal(existsSync(canary), false, 'the module outside the root was never loaded');
      for (const line of logger.lines) assert.ok(!line.includes(outside), line);
      // Put back, it loads again.
      await rm(path.join(root, 'say.mjs'));
      await writeFile(path.join(root, 'say.mjs'), "export default () => ({ text: 'mine again' });\n");
      assert.deepEqual(value(await runner.run(call(file))), { text: 'mine again' });
    } finally {
      await runner.close();
    }
    assert.equal(existsSync(canary), false);
  });

  test('a directory on its path replaced by a symlink leading out: refused likewise', async () => {
    const runner = new TransformRunner({ timeoutMs: 2000, workers: 1 });
    try {
      const file = await confineModule(root, root, 'team/say.mjs', 'hooks.mappings[0].transform.module');
      assert.deepEqual(value(await runner.run(call(file))), { text: 'team' });
      await rename(path.join(root, 'team'), path.join(root, 'team-old'));
      await symlink(outside, path.join(root, 'team'));
      runner.invalidate();
      assert.match(failure(await runner.run(call(file))).reason, /^the transform module was not loaded/);
      assert.equal(existsSync(canary), false, 'the module outside the root was never loaded');
    } finally {
      await runner.close();
    }
  });
});

describe('hard links', () => {
  let root: string;
  let outside: string;
  let canary: string;

  before(async () => {
    const base = await realTemp('hookgate-hardlink-');
    root = path.join(base, 'hooks', 'transforms');
    outside = path.join(base, 'outside');
    canary = path.join(base, 'canary.txt');
    await mkdir(root, { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(
      path.join(outside, 'evil.mjs'),
      `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(canary)}, 'loaded');\nexport default () => ({ text: 'evil' });\n`,
    );
  });

  test('a hard link to code outside the root is refused at load, naming the key', async () => {
    await link(path.join(outside, 'evil.mjs'), path.join(root, 'linked.mjs'));
    await assert.rejects(
      confineModule(root, root, 'linked.mjs', 'hooks.mappings[0].transform.module'),
      /^Error: hooks\.mappings\[0\]\.transform\.module "linked\.mjs" has 2 hard links; a transform must have only its own name/,
    );
    // Inside the root too: the rule is about the file, not about where its other name is.
    await writeFile(path.join(root, 'a.mjs'), "export default () => ({ text: 'a' });\n");
    await link(path.join(root, 'a.mjs'), path.join(root, 'b.mjs'));
    await assert.rejects(confineModule(root, root, 'a.mjs', 'k'), /has 2 hard links/);
  });

  test('a file that gains a hard link after it was checked is not loaded again', async () => {
    await writeFile(path.join(root, 'say.mjs'), "export default () => ({ text: 'mine' });\n");
    const file = await confineModule(root, root, 'say.mjs', 'hooks.mappings[0].transform.module');
    const runner = new TransformRunner({ timeoutMs: 2000, workers: 1 });
    try {
      assert.deepEqual(value(await runner.run(call(file))), { text: 'mine' });
      // Replaced by a hard link to the outside file (same path, so its real path does not change).
      await link(path.join(outside, 'evil.mjs'), path.join(root, 'say.tmp'));
      await rename(path.join(root, 'say.tmp'), path.join(root, 'say.mjs'));
      runner.invalidate();
      assert.match(
        failure(await runner.run(call(file))).reason,
        /^the transform module was not loaded: it has more than one hard link/,
      );
      assert.equal(existsSync(canary), false, 'the module outside the root was never loaded');
    } finally {
      await runner.close();
    }
  });
});

describe('error texts', () => {
  let dir: string;
  const f = (name: string): string => path.join(dir, name);

  before(async () => {
    dir = await realTemp('hookgate-errors-');
    await writeFile(
      f('throws.mjs'),
      'export default (ctx) => { throw new Error("bad card " + JSON.stringify(ctx.payload)); };\n',
    );
    await writeFile(f('throws-header.mjs'), 'export default (ctx) => { throw ctx.headers["x-api-key"]; };\n');
    await writeFile(
      f('load-throws.mjs'),
      `throw new Error(${JSON.stringify(`top level ${CANARY}`)});\nexport default () => null;\n`,
    );
    await writeFile(
      f('uncaught.mjs'),
      `export default () => { setTimeout(() => { throw new Error(${JSON.stringify(`later ${CANARY}`)}); }); return new Promise(() => {}); };\n`,
    );
    await writeFile(f('bad-export.mjs'), `export default { text: ${JSON.stringify(CANARY)} };\n`);
  });

  test('reasons and logs never carry the transform’s text; the detail keeps it for operators', async () => {
    const logger = collectingLogger();
    const runner = new TransformRunner({ timeoutMs: 2000, workers: 1, logger });
    const outcomes: TransformOutcome[] = [];
    try {
      const thrown = await runner.run(call(f('throws.mjs'), { card: CANARY }));
      assert.equal(failure(thrown).reason, 'the transform threw an error');
      assert.match(failure(thrown).detail ?? '', new RegExp(CANARY), 'kept for an operator tool');
      const header = await runner.run({
        ...call(f('throws-header.mjs')),
        ctx: { payload: {}, headers: { 'x-api-key': CANARY }, query: {}, path: 'p' },
      });
      assert.equal(failure(header).reason, 'the transform threw an error');
      const loaded = await runner.run(call(f('load-throws.mjs')));
      assert.equal(failure(loaded).reason, 'the transform module could not be loaded');
      const crashed = await runner.run(call(f('uncaught.mjs')));
      assert.equal(failure(crashed).reason, 'the transform crashed its worker');
      assert.match(failure(crashed).detail ?? '', new RegExp(CANARY));
      outcomes.push(thrown, header, loaded, crashed, await runner.run(call(f('bad-export.mjs'))));
    } finally {
      await runner.close();
    }
    for (const outcome of outcomes) assert.ok(!failure(outcome).reason.includes(CANARY), failure(outcome).reason);
    assert.ok(logger.lines.length > 0, 'the crash was logged');
    for (const line of logger.lines) assert.ok(!line.includes(CANARY), line);
  });
});
