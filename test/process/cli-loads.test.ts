// What a short command loads: `hookgate --help` and `hookgate config get` answer without the gateway's
// modules (the core, ajv, the channels, the Gmail bridge, the server), which were most of their time.
// Checked structurally, by the modules the process resolves, never by the clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { EXIT_BOUND_MS, exitWithin, SOURCE_CLI, spawnCapturing, writeConfig } from '../helpers/spawn-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';

/** Runs the CLI from source with a resolve hook that prints every module URL it resolves. */
async function loadedBy(args: string[]): Promise<{ code: number | null; out: string; loaded: string[] }> {
  const dir = await tempDir('hookgate-cli-loads-');
  const hooks = path.join(dir, 'hooks.mjs');
  await writeFile(
    hooks,
    `export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  process.stderr.write('LOADED ' + r.url + '\\n');
  return r;
}\n`,
  );
  const register = path.join(dir, 'register.mjs');
  await writeFile(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  const { child, output, exited } = spawnCapturing(process.execPath, ['--import', register, ...SOURCE_CLI, ...args]);
  const code = await exitWithin(child, exited, EXIT_BOUND_MS, `hookgate ${args.join(' ')}`);
  const lines = output().split('\n');
  return {
    code,
    out: lines.filter((l) => !l.startsWith('LOADED ')).join('\n'),
    loaded: lines.filter((l) => l.startsWith('LOADED ')).map((l) => l.slice('LOADED '.length)),
  };
}

/** Modules only a command that does real work needs. */
const HEAVY = [
  /\/plugin\/host-kit\.ts$/,
  /\/plugin\/index\.ts$/,
  /\/node_modules\/ajv\//,
  /\/server\/gateway\.ts$/,
  /\/gmail\//,
  /\/channels\//,
];

function heavyIn(loaded: string[]): string[] {
  return loaded.filter((url) => HEAVY.some((re) => re.test(url)));
}

test('`hookgate --help` loads none of the commands', async () => {
  const { code, out, loaded } = await loadedBy(['--help']);
  assert.equal(code, 0, out);
  assert.match(out, /Commands:/);
  assert.ok(
    loaded.some((u) => u.endsWith('/cli/index.ts')),
    'the hook saw the CLI load',
  );
  assert.deepEqual(heavyIn(loaded), []);
  assert.deepEqual(
    loaded.filter((u) => u.includes('/cli/commands/')),
    [],
  );
});

test('`hookgate config get` loads the file reader, not the schemas or the gateway', async () => {
  const dir = await tempDir('hookgate-cli-loads-');
  const configPath = await writeConfig(dir);
  const { code, out, loaded } = await loadedBy(['config', 'get', 'hooks.token', '--config', configPath]);
  assert.equal(code, 0, out);
  assert.equal(out.trim(), 'spawned-hook-token-0123456789');
  assert.deepEqual(heavyIn(loaded), []);
});

test('`hookgate help gateway` loads that command alone, and `config check` still checks', async () => {
  const help = await loadedBy(['help', 'gateway']);
  assert.equal(help.code, 0, help.out);
  assert.match(help.out, /Usage: (npx )?hookgate gateway/);
  const commands = help.loaded.filter((u) => u.includes('/cli/commands/')).map((u) => path.basename(u));
  assert.deepEqual([...new Set(commands)], ['gateway-command.ts']);
  const dir = await tempDir('hookgate-cli-loads-');
  const configPath = await writeConfig(dir);
  const check = await loadedBy(['config', 'check', '--config', configPath]);
  assert.equal(check.code, 0, check.out);
  assert.match(check.out, /: OK/);
});
