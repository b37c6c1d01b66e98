// TypeScript transforms compiled by esbuild in the worker (plugin/transforms/esbuild-transform.mjs):
// import.meta keeps the file's own values, stack traces and syntax errors name the lines as written,
// imported TypeScript reloads on invalidate(), and jiti's Babel is loaded only for top-level await.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { TransformRunner } from '../../plugin/transforms/index.ts';
import { call, detail, failed, tmp, value, write } from '../helpers/transform-modules.ts';

/** Whether jiti's Babel bundle has been loaded in the worker that runs the transform. */
const BABEL_LOADED = `import { createRequire } from 'node:module';
const babelLoaded = (): boolean => Object.keys(createRequire(import.meta.url).cache).some((k) => k.endsWith('babel.cjs'));
`;

describe('TypeScript transforms through esbuild', () => {
  let dir: string;
  const f = (name: string): string => path.join(dir, name);
  let runner: TransformRunner;

  before(() => {
    dir = tmp('hookgate-esbuild-');
    runner = new TransformRunner({ timeoutMs: 2000, workers: 1 });
  });

  after(async () => {
    await runner.close();
  });

  test('import.meta gives the file its own url, filename and dirname, and resolve() resolves beside it', async () => {
    write(f('helper.mjs'), 'export const word = "hi";\n');
    write(
      f('meta.ts'),
      `#!/usr/bin/env node
interface Ctx { payload: { n: number } }
export default (ctx: Ctx) => {
  const meta = import.meta as unknown as Record<string, unknown>;
  return {
    url: import.meta.url,
    filename: import.meta.filename,
    dirname: import.meta.dirname,
    resolved: String(import.meta.resolve('./helper.mjs')),
    whole: { url: meta.url, filename: meta.filename, dirname: meta.dirname },
    n: ctx.payload.n,
  };
};
`,
    );
    const file = f('meta.ts');
    const url = pathToFileURL(file).href;
    assert.deepEqual(value(await runner.run(call(file, 'default', { n: 3 }))), {
      url,
      filename: file,
      dirname: dir,
      resolved: pathToFileURL(f('helper.mjs')).href,
      whole: { url, filename: file, dirname: dir },
      n: 3,
    });
  });

  test("a stack trace names the lines of the .ts files as written, the transform's and an imported module's", async () => {
    write(
      f('boom.ts'),
      `// a helper that throws
type Never = never;
export function boom(): Never {
  throw new Error('boom');
}
`,
    );
    write(
      f('positions.ts'),
      `import { boom } from './boom.ts';
interface Ctx { payload: Record<string, unknown> }
type Out = { frames: string[] };

export default (ctx: Ctx): Out => {
  void ctx;
  try {
    boom();
  } catch (err) {
    return { frames: String((err as Error).stack).split('\\n').slice(0, 3) };
  }
  return { frames: [] };
};
`,
    );
    const { frames } = value(await runner.run(call(f('positions.ts')))) as { frames: string[] };
    assert.equal(frames[0], 'Error: boom');
    assert.ok(frames[1]!.includes(`${f('boom.ts')}:4:9)`), frames[1]);
    assert.ok(frames[2]!.includes(`${f('positions.ts')}:8:5)`), frames[2]);
  });

  test("a syntax error's detail names the line and column as written", async () => {
    write(f('broken.ts'), `interface A { a: number }\n\nexport default (ctx: A) => {\n  return ctx.a +;\n};\n`);
    const outcome = await runner.run(call(f('broken.ts')));
    assert.equal(failed(outcome), 'the transform module could not be loaded');
    assert.ok(detail(outcome)!.includes(`${f('broken.ts')}:4:`), detail(outcome));
  });

  test('an imported .ts module is compiled afresh after invalidate()', async () => {
    write(f('word.ts'), 'export const word: string = "old";\n');
    write(f('uses-word.ts'), 'import { word } from "./word.ts";\nexport default () => ({ word });\n');
    assert.deepEqual(value(await runner.run(call(f('uses-word.ts')))), { word: 'old' });
    write(f('word.ts'), 'export const word: string = "new";\n');
    runner.invalidate();
    assert.deepEqual(value(await runner.run(call(f('uses-word.ts')))), { word: 'new' });
  });

  test("jiti's Babel is not loaded for TypeScript; only a module with top-level await needs it", async () => {
    write(f('plain.ts'), `${BABEL_LOADED}export default (): { babel: boolean } => ({ babel: babelLoaded() });\n`);
    write(
      f('awaits.mts'),
      `${BABEL_LOADED}const base: number = await Promise.resolve(1);\nexport default () => ({ babel: babelLoaded(), base });\n`,
    );
    runner.invalidate();
    assert.deepEqual(value(await runner.run(call(f('plain.ts')))), { babel: false });
    assert.deepEqual(value(await runner.run(call(f('awaits.mts')))), { babel: true, base: 1 });
  });
});
