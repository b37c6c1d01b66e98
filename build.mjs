// `npm run build`: the package as Node runs it, in dist/. Two bundles, the command line with its
// gateway (hookgate.js) and the OpenClaw plugin (openclaw.js), each carrying the libraries it uses, so
// the installed package depends only on jiti and esbuild (the transform worker loads them). OpenClaw
// copies a plugin's package and every dependency it declares on each config reload, and removes the
// copy inside a fixed drain time; a package of a few dozen files stays inside it on a busy machine.
// The transform worker's modules are copied beside the bundles: the worker is started from a file.
import { build } from 'esbuild';
import { copyFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

const root = import.meta.dirname;
const outdir = path.resolve(root, process.argv[2] ?? 'dist');

await rm(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: {
    hookgate: 'plugin/hosts/standalone/cli/index.ts',
    openclaw: 'plugin/hosts/openclaw/index.ts',
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  // Flat: every chunk sits beside the worker's files, which it names relative to itself.
  chunkNames: '[name]-[hash]',
  external: ['openclaw', 'openclaw/*', 'jiti', 'esbuild'],
  // The bundled CommonJS libraries (ioredis, ajv, prom-client) require Node's own modules.
  banner: {
    js: "import { createRequire as __hookgateRequire } from 'node:module';\nconst require = __hookgateRequire(import.meta.url);",
  },
  legalComments: 'eof',
  logLevel: 'warning',
});
const transforms = path.join(root, 'plugin', 'transforms');
for (const name of await readdir(transforms))
  if (name.endsWith('.mjs')) await copyFile(path.join(transforms, name), path.join(outdir, name));
// The launcher rebuilds when a source is newer than this.
await writeFile(path.join(outdir, '.built'), `${new Date().toISOString()}\n`);
