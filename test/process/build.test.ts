// `npm start` runs the compiled gateway (dist/), not the sources: this builds it the same way into a
// scratch folder and checks that it runs whole (schemas, the transform worker, the CLI).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eventually, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

test('the built gateway serves wake, agent and a TypeScript transform on bare Node', async () => {
  // Inside the repository, so the build finds node_modules the way dist/ does.
  await mkdir(path.join(ROOT, '.tmp'), { recursive: true });
  const out = await mkdtemp(path.join(ROOT, '.tmp', 'build-'));
  try {
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    await run(
      process.execPath,
      [tsc, '-p', 'tsconfig.build.json', '--outDir', out, '--tsBuildInfoFile', path.join(out, '.tsbuildinfo')],
      { cwd: ROOT },
    );

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
    // No tsx: the compiled CLI on bare Node, as `npm start` runs it.
    const gw = await spawnGateway(dir, [], [path.join(out, 'plugin', 'hosts', 'standalone', 'cli', 'index.js')]);
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
    await rm(out, { recursive: true, force: true });
  }
});
