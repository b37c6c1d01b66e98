// Transform limits through the real gateway process over loopback: a module swapped for a symlink while
// the gateway runs (the reload that notices it is refused) is never loaded, and a transform's own text
// (its error message) reaches neither the client's 500 nor the log; an oversize action is a 500.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { eventually, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const T = 'hooks/transforms';
const CANARY = 'CANARY-4111111111111111-sk_live_2b9c';

test('a transform swapped for a symlink leading out while the gateway runs is refused; its code never runs', async () => {
  const stateDir = await tempStateDir();
  const outside = await tempDir('hookgate-outside-');
  const canary = path.join(outside, 'canary.txt');
  await writeFile(
    path.join(outside, 'evil.mjs'),
    `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(canary)}, 'loaded');\nexport default () => ({ text: 'evil' });\n`,
  );
  await mkdir(path.join(stateDir, T), { recursive: true });
  await writeFile(path.join(stateDir, T, 'say.mjs'), "export default () => ({ text: 'mine' });\n");
  await writeConfig(stateDir, {
    hooks: { mappings: [{ id: 'say', match: { path: 'say' }, action: 'wake', transform: { module: 'say.mjs' } }] },
  });
  const gw = await spawnGateway(stateDir);
  try {
    assert.equal((await gw.hook('/hooks/say', {})).status, 200);
    await symlink(path.join(outside, 'evil.mjs'), path.join(stateDir, T, 'say.tmp'));
    await rename(path.join(stateDir, T, 'say.tmp'), path.join(stateDir, T, 'say.mjs'));
    await eventually(async () => gw.output().includes('config reload refused'));
    const refused = await gw.hook('/hooks/say', {});
    assert.equal(refused.status, 500);
    assert.equal(refused.body.code, 'mapping_failed');
    assert.match(refused.body.error, /the transform module was not loaded/);
    assert.equal(existsSync(canary), false, 'the module outside the transforms root never ran');
  } finally {
    await gw.stop();
  }
});

test('a transform’s error text reaches neither the 500 nor the log; an oversize action is a 500', async () => {
  const stateDir = await tempStateDir();
  await mkdir(path.join(stateDir, T), { recursive: true });
  await writeFile(
    path.join(stateDir, T, 'throws.mjs'),
    'export default (ctx) => { throw new Error("cannot charge " + JSON.stringify(ctx.payload)); };\n',
  );
  await writeFile(path.join(stateDir, T, 'huge.mjs'), "export default () => ({ text: 'x'.repeat(100_000_000) });\n");
  await writeConfig(stateDir, {
    hooks: {
      mappings: [
        { id: 'throws', match: { path: 'throws' }, action: 'wake', transform: { module: 'throws.mjs' } },
        { id: 'huge', match: { path: 'huge' }, action: 'wake', transform: { module: 'huge.mjs' } },
      ],
    },
  });
  const gw = await spawnGateway(stateDir);
  try {
    const thrown = await gw.hook('/hooks/throws', { card: CANARY });
    assert.equal(thrown.status, 500);
    assert.equal(thrown.body.error, 'mapping "throws": the transform threw an error');
    const huge = await gw.hook('/hooks/huge', {});
    assert.equal(huge.status, 500);
    assert.equal(huge.body.error, 'mapping "huge": the transform returned more than 262144 bytes');
    const line = await eventually(async () =>
      gw
        .output()
        .split('\n')
        .find((l) => l.includes('transform failed') && l.includes('throws.mjs')),
    );
    assert.match(line, /the transform threw an error/);
    assert.ok(!gw.output().includes(CANARY), 'the log never carries the transform’s text');
    const history = await gw.admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/history`);
    assert.ok(!JSON.stringify(history).includes('x'.repeat(1000)), 'nothing oversize reached the session');
  } finally {
    await gw.stop();
  }
});
