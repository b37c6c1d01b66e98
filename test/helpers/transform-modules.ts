// Fixture transform modules and small readers of outcomes, shared by the transform sandbox's tests
// (transform-runner, transform-pool, transform-worker-slot). Fixture files go to temp dirs.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TransformCall, TransformOutcome } from '../../plugin/transforms/index.ts';

export const SECRET = 'PAYLOAD-SECRET-7f3a';

const made: string[] = [];
process.once('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

/** A temp dir by its real path (on some systems the temp dir itself is reached through a symlink). */
export function tmp(prefix: string): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

export function write(file: string, text: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

export function ctx(payload: Record<string, unknown> = { n: 1 }): TransformCall['ctx'] {
  return { payload, headers: { 'x-test': 'yes' }, query: { q: '1' }, path: 'demo' };
}

export function call(file: string, exportName = 'default', payload?: Record<string, unknown>): TransformCall {
  return { file, exportName, ctx: ctx(payload) };
}

export function failed(outcome: TransformOutcome): string {
  assert.equal(outcome.ok, false, `expected a failure, got ${JSON.stringify(outcome)}`);
  return (outcome as { reason: string }).reason;
}

/** What the transform said, kept beside the reason for operator tools. */
export function detail(outcome: TransformOutcome): string | undefined {
  assert.equal(outcome.ok, false, `expected a failure, got ${JSON.stringify(outcome)}`);
  return (outcome as { detail?: string }).detail;
}

export function value(outcome: TransformOutcome): Record<string, unknown> | null {
  assert.equal(outcome.ok, true, `expected success, got ${JSON.stringify(outcome)}`);
  return (outcome as { value: Record<string, unknown> | null }).value;
}

export function collectingLogger(): { lines: string[]; warn(msg: string, fields?: Record<string, unknown>): void } {
  const lines: string[] = [];
  return { lines, warn: (msg, fields) => void lines.push(`${msg} ${JSON.stringify(fields ?? {})}`) };
}

/** Writes the fixture modules the runner, pool and slot tests call into `dir`; returns a path maker. */
export function writeTransformModules(dir: string): (name: string) => string {
  const f = (name: string): string => path.join(dir, name);
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
  // `ready` loads the module without looping: a test that needs the loop to start before calls
  // queued behind it (whose modules load meanwhile) calls it first.
  write(f('loop.ts'), `export default () => { for (;;) {} };\nexport const ready = () => null;\n`);
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
  return f;
}
