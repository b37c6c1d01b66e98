// `node bench/worker-memory.mjs`: what one transform worker costs, by the kind of module it ran. Each
// kind runs in a fresh process: a TransformRunner bundled as build.mjs bundles it, with one worker, makes
// one call, and the process's RSS before the worker started and after the call is printed, with the
// worker isolate's own heap as the transform read it (process.memoryUsage() in a worker is its isolate's).
// docs/performance.md keeps the figures.
import { spawn } from 'node:child_process';
import { build } from 'esbuild';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TRANSFORMS = path.join(ROOT, 'plugin', 'transforms');
const MB = 1024 * 1024;

/** The same transform in each form; it answers with its isolate's heap once the module has run. */
const BODY = `({ heapUsed: process.memoryUsage().heapUsed, heapTotal: process.memoryUsage().heapTotal, text: String(ctx.payload.n) })`;
const KINDS = {
  mjs: `export default (ctx) => ${BODY};\n`,
  ts: `interface Ctx { payload: { n: number } }\ntype Out = Record<string, unknown>;\nexport default (ctx: Ctx): Out => ${BODY};\n`,
  'mts (top-level await)': `const ready: boolean = await Promise.resolve(true);\nexport default (ctx: { payload: { n: number } }) => ready && ${BODY};\n`,
  cjs: `module.exports = (ctx) => ${BODY};\n`,
};
const EXTENSION = { mjs: 'mjs', ts: 'ts', 'mts (top-level await)': 'mts', cjs: 'cjs' };

/** The runner and the worker's files, built beside each other as in dist/. */
async function buildRunner(dir) {
  await build({
    entryPoints: [path.join(TRANSFORMS, 'index.ts')],
    outfile: path.join(dir, 'runner.js'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    external: ['jiti', 'esbuild'],
    logLevel: 'warning',
  });
  for (const name of fs.readdirSync(TRANSFORMS))
    if (name.endsWith('.mjs')) fs.copyFileSync(path.join(TRANSFORMS, name), path.join(dir, name));
  return path.join(dir, 'runner.js');
}

async function measureOne(kind, runnerFile) {
  const { TransformRunner } = await import(pathToFileURL(runnerFile).href);
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'worker-memory-')));
  const file = path.join(dir, `transform.${EXTENSION[kind]}`);
  fs.writeFileSync(file, KINDS[kind]);
  const runner = new TransformRunner({ timeoutMs: 10_000, workers: 1 });
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  const outcome = await runner.run({
    file,
    exportName: 'default',
    ctx: { payload: { n: 1 }, headers: {}, query: {}, path: 'x' },
  });
  if (!outcome.ok) throw new Error(`${kind}: ${outcome.reason} ${outcome.detail ?? ''}`);
  globalThis.gc?.();
  const after = process.memoryUsage().rss;
  await runner.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    kind,
    rssBeforeMb: before / MB,
    rssAfterMb: after / MB,
    workerHeapUsedMb: outcome.value.heapUsed / MB,
    workerHeapTotalMb: outcome.value.heapTotal / MB,
  };
}

function inChild(kind, runnerFile) {
  return new Promise((resolve, reject) => {
    const args = ['--expose-gc', fileURLToPath(import.meta.url), '--kind', kind, runnerFile];
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${kind}: exit ${code}`))));
  });
}

const at = process.argv.indexOf('--kind');
if (at > 0) {
  process.stdout.write(JSON.stringify(await measureOne(process.argv[at + 1], process.argv[at + 2])));
} else {
  // Inside the repository, so the worker finds jiti and esbuild in its node_modules.
  const built = fs.mkdtempSync(path.join(ROOT, 'node_modules', '.cache', 'worker-memory-'));
  process.once('exit', () => fs.rmSync(built, { recursive: true, force: true }));
  const runnerFile = await buildRunner(built);
  const rounds = Number(process.env.ROUNDS ?? 3);
  const f = (x) => x.toFixed(1).padStart(6);
  console.log('kind                   | RSS before | RSS after | worker adds | worker heap used / total (MB)');
  for (const kind of Object.keys(KINDS)) {
    for (let i = 0; i < rounds; i++) {
      const r = await inChild(kind, runnerFile);
      console.log(
        `${kind.padEnd(22)} | ${f(r.rssBeforeMb)}     | ${f(r.rssAfterMb)}    | ${f(r.rssAfterMb - r.rssBeforeMb)}      | ${f(r.workerHeapUsedMb)} / ${f(r.workerHeapTotalMb)}`,
      );
    }
  }
}
