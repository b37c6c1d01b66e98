// The console's files ship in the package (it is served from the installed package, with no build
// step), and stay small: at most 150 KB compressed in all (DESIGN.md, the console: cost).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { ROOT } from '../helpers/spawn-gateway.ts';

const run = promisify(execFile);

async function consoleFiles(): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, 'console'), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
    .sort();
}

test('every file of console/ is in the package', async () => {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const packed = new Set((JSON.parse(stdout) as [{ files: { path: string }[] }])[0].files.map((f) => f.path));
  const files = await consoleFiles();
  assert.ok(files.includes('console/index.html') && files.includes('console/login.html'));
  for (const file of files) assert.ok(packed.has(file), `${file} is not in the package`);
});

test("the console's files are at most 150 KB compressed in all", async () => {
  let compressed = 0;
  for (const file of await consoleFiles()) compressed += gzipSync(await readFile(path.join(ROOT, file))).length;
  assert.ok(compressed <= 150 * 1024, `${compressed} bytes compressed`);
});
