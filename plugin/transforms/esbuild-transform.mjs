// jiti's `transform` hook for the transform worker: TypeScript (and ESM that jiti runs as CommonJS)
// compiled by esbuild rather than by jiti's bundled Babel, which is most of a TypeScript worker's memory
// (docs/performance.md). jiti stays the loader: it resolves, reads and runs what this returns.
//
// - `import.meta.url`, `.filename`, `.dirname` become the file's own values, `import.meta.resolve` jiti's
//   resolver (as jiti's Babel does), and a bare `import.meta` an object of the first three.
// - Stack traces name the lines as written: each file's source map goes to source-positions.mjs.
// - Top-level await cannot be written as CommonJS, so such a module (rare) goes to jiti's Babel after all.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { rememberSourceMap } from './source-positions.mjs';

const require = createRequire(import.meta.url);
let esbuild;
let babel;

/**
 * The code goes back with a line of its own before it: jiti writes its function header on the code's
 * first line, which would shift that line's columns.
 */
const LINE_SHIFT = 1;

/** (jiti's TransformOptions) -> { code } */
export function transformModule(opts) {
  const { filename, source } = opts;
  esbuild ??= loadEsbuild();
  let out;
  try {
    out = esbuild.transformSync(withoutHashbang(source), optionsFor(filename));
  } catch (err) {
    if (onlyTopLevelAwait(err)) return babelTransform(opts);
    throw syntaxError(err, filename);
  }
  rememberSourceMap(filename, out.map, LINE_SHIFT);
  return { code: `\n${out.code}` };
}

function loadEsbuild() {
  // By default esbuild's synchronous API starts a worker thread of its own (inside this one) and keeps it;
  // without threads it runs its binary once per call and keeps nothing. This worker's env is its own copy.
  process.env.ESBUILD_WORKER_THREADS = '0';
  return require('esbuild');
}

function babelTransform(opts) {
  // jiti's own transform; its package exports do not name the file, so it is found beside jiti's entry.
  babel ??= require(path.join(path.dirname(require.resolve('jiti')), '../dist/babel.cjs'));
  return babel(opts);
}

function optionsFor(filename) {
  const url = pathToFileURL(filename).href;
  const dirname = path.dirname(filename);
  return {
    loader: /\.[cm]?tsx$/.test(filename) ? 'tsx' : /\.[cm]?ts$/.test(filename) ? 'ts' : 'js',
    format: 'cjs',
    platform: 'node',
    target: `node${process.versions.node}`,
    sourcefile: filename,
    sourcemap: 'external',
    sourcesContent: false,
    logLevel: 'silent',
    define: {
      'import.meta.url': JSON.stringify(url),
      'import.meta.filename': JSON.stringify(filename),
      'import.meta.dirname': JSON.stringify(dirname),
      'import.meta.resolve': 'jitiESMResolve',
      'import.meta': JSON.stringify({ url, filename, dirname }),
    },
  };
}

/** A hashbang line made a comment of the same length, so lines stay where they are. */
function withoutHashbang(source) {
  return source.startsWith('#!') ? `//${source.slice(2)}` : source;
}

function onlyTopLevelAwait(err) {
  const errors = err?.errors;
  return Array.isArray(errors) && errors.length > 0 && errors.every((e) => /top-level await/i.test(e?.text ?? ''));
}

/** esbuild's first complaint with the position it names, on one line. */
function syntaxError(err, filename) {
  const first = err?.errors?.[0];
  if (!first || typeof first.text !== 'string') return err;
  const where = first.location ? `${filename}:${first.location.line}:${first.location.column + 1}` : filename;
  return new SyntaxError(`${first.text} (${where})`);
}
