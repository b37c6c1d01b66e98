// `hookgate config check` on a good config: the hooks settings and a table of the mappings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = path.join(ROOT, 'plugin', 'hosts', 'standalone', 'cli', 'index.ts');

test('config check prints the mappings as a table', async () => {
  const dir = await tempStateDir();
  await mkdir(path.join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(path.join(dir, 'hooks', 'transforms', 'tr.mjs'), 'export default () => null;\n');
  const configPath = await writeConfig(dir, {
    hooks: {
      presets: ['gmail'],
      mappings: [
        { id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'CI {{status}}' },
        {
          id: 'gh',
          match: { path: 'gh' },
          action: 'agent',
          transform: { module: 'tr.mjs' },
          verify: { scheme: 'github', secret: 'github-secret-0123456789' },
        },
        {
          id: 'wa',
          match: { path: 'wa' },
          action: 'wake',
          textTemplate: 'wa',
          handshake: { kind: 'meta', verifyToken: 'meta-verify-token-0123456789' },
          verify: { scheme: 'hmac', header: 'x-hub-signature-256', prefix: 'sha256=', secret: 'meta-app-secret-0123' },
        },
      ],
    },
  });
  const { stdout: out } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', CLI, 'config', 'check', '--config', configPath],
    { cwd: ROOT },
  );
  const lines = out.trimEnd().split('\n');
  assert.equal(lines[0], `${configPath}: OK`);
  assert.match(out, /^hooks\s+enabled at \/hooks$/m);
  const header = lines.findIndex((l) => l.startsWith('ID '));
  assert.match(lines[header]!, /^ID\s+PATH\s+SOURCE\s+ACTION\s+ADMITTED BY\s+TRANSFORM\s+FOREACH\s+DEDUPE$/);
  assert.match(lines[header + 1]!, /^ci\s+\/hooks\/ci\s+wake\s+hook token$/);
  assert.match(lines[header + 2]!, /^gh\s+\/hooks\/gh\s+agent\s+github signature\s+tr\.mjs$/);
  assert.match(lines[header + 3]!, /^wa\s+\/hooks\/wa\s+wake\s+hmac signature, meta handshake$/);
  assert.match(
    lines[header + 4]!,
    /^gmail\s+\/hooks\/gmail\s+agent \(gmail preset\)\s+hook token\s+messages\s+\{\{item\.id\}\}$/,
  );
  assert.ok(!out.includes('github-secret-0123456789'), 'no secret printed');
  assert.ok(!out.includes('meta-verify-token-0123456789'), 'no verify token printed');
});
