// `npm start` runs the built gateway (dist/), not the sources: this builds it the same way into a
// scratch folder and checks that it runs whole (schemas, the transform worker, the CLI), and that
// the package it makes needs no library but the two the transform worker loads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eventually, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('the built gateway serves wake, agent and a TypeScript transform on bare Node, with only jiti and esbuild installed', async () => {
  // A package outside the repository whose node_modules holds only what package.json depends on.
  const pkg = await tempDir('hookgate-built-');
  const out = path.join(pkg, 'dist');
  try {
    await run(process.execPath, [path.join(ROOT, 'build.mjs'), out], { cwd: ROOT });
    const { dependencies } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8'));
    assert.deepEqual(Object.keys(dependencies).sort(), ['esbuild', 'jiti']);
    await mkdir(path.join(pkg, 'node_modules', '@esbuild'), { recursive: true });
    for (const name of ['jiti', 'esbuild', `@esbuild/${process.platform}-${process.arch}`])
      await symlink(path.join(ROOT, 'node_modules', name), path.join(pkg, 'node_modules', name));

    const dir = await tempStateDir();
    await mkdir(path.join(dir, 'hooks', 'transforms'), { recursive: true });
    await writeFile(
      path.join(dir, 'hooks', 'transforms', 'deploy.ts'),
      `export default (ctx: { payload: { service: string } }): { text: string } => ({ text: 'deployed ' + ctx.payload.service });\n`,
    );
    await writeConfig(dir, {
      hooks: {
        mappings: [{ id: 'deploy', match: { path: 'deploy' }, action: 'wake', transform: { module: 'deploy.ts' } }],
      },
    });
    // No tsx: the built CLI on bare Node, as `npm start` runs it.
    const gw = await spawnGateway(dir, [], [path.join(out, 'hookgate.js')]);
    try {
      assert.deepEqual(await gw.hook('/hooks/wake', { text: 'built' }), {
        status: 200,
        body: { ok: true, mode: 'now' },
      });
      assert.deepEqual(await gw.hook('/hooks/deploy', { service: 'api' }), {
        status: 200,
        body: { ok: true, mode: 'now' },
      });
      const missing = await gw.hook('/hooks/wake', { mode: 'now' });
      assert.equal(missing.status, 400);
      assert.match(missing.body.error, /text/);
      const accepted = await gw.hook('/hooks/agent', { message: 'built run', deliver: false });
      assert.equal(accepted.status, 202);
      await eventually(async () => (await gw.admin(`/api/runs/${accepted.body.runId}`)).status === 'ok');
      const { entries } = await gw.admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/history`);
      assert.ok(entries.some((e: { text: string }) => e.text.includes('deployed api')));
    } finally {
      await gw.stop();
    }
  } finally {
    await rm(pkg, { recursive: true, force: true });
  }
});
