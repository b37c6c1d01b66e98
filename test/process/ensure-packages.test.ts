// The set-up scripts npm test and CI run first (ensure-redis-server.sh, ensure-strace.sh and
// ensure-chromium.sh in test/, over its apt-install.sh): the program found, installed through
// apt-get when that needs no question, or a stop at once with the command to run. The system's
// commands (apt-get, sudo, id) are stand-ins on a PATH of their own that log what they were asked.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/temp-dir.ts';

const TEST_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Each script, the program it ensures, and a word its no-apt-get advice names. */
const SCRIPTS = [
  { script: 'ensure-redis-server.sh', program: 'redis-server', advice: /redis/ },
  { script: 'ensure-strace.sh', program: 'strace', advice: /strace package/ },
  { script: 'ensure-chromium.sh', program: 'chromium', advice: /chromium/ },
];

interface System {
  uid: number;
  installed?: boolean;
  aptGet?: boolean;
  /** passwordless: `sudo -n` runs the command; else it refuses as sudo does without a password. */
  sudo?: 'passwordless' | 'password';
}

for (const { script, program, advice } of SCRIPTS) {
  /** A bin dir holding only the commands this system has; each logs its call to calls.log. */
  async function fakeSystem(system: System): Promise<{ bin: string; calls: () => Promise<string> }> {
    const bin = await tempDir('hookgate-fake-system-');
    const log = path.join(bin, 'calls.log');
    const tool = (name: string, body: string): Promise<void> =>
      writeFile(path.join(bin, name), `#!/bin/sh\necho "${name} $*" >> '${log}'\n${body}\n`, { mode: 0o755 });
    await tool('id', `echo ${system.uid}`);
    await symlink('/usr/bin/env', path.join(bin, 'env'));
    await symlink('/bin/uname', path.join(bin, 'uname'));
    if (system.installed) await tool(program, '');
    if (system.aptGet)
      await tool(
        'apt-get',
        `echo "DEBIAN_FRONTEND=$DEBIAN_FRONTEND" >> '${log}'\n` +
          `[ "$1" = install ] && printf '#!/bin/sh\\n' > '${bin}/${program}' && /bin/chmod 755 '${bin}/${program}'\nexit 0`,
      );
    if (system.sudo === 'passwordless') await tool('sudo', '[ "$1" = -n ] && shift; "$@"');
    if (system.sudo === 'password') await tool('sudo', 'echo "sudo: a password is required" >&2; exit 1');
    return { bin, calls: async () => (existsSync(log) ? readFile(log, 'utf8') : '') };
  }

  async function ensure(bin: string): Promise<{ code: number | null; stderr: string }> {
    const child = spawn('/bin/sh', [path.join(TEST_DIR, script)], {
      env: { PATH: bin },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, stderr };
  }

  describe(script, () => {
    test(`${program} on the PATH: nothing to do, nothing installed`, async () => {
      const { bin, calls } = await fakeSystem({ uid: 1000, installed: true, aptGet: true, sudo: 'passwordless' });
      assert.deepEqual(await ensure(bin), { code: 0, stderr: '' });
      assert.doesNotMatch(await calls(), /apt-get|sudo/);
    });

    test(`as root with apt-get: installs ${program} non-interactively`, async () => {
      const { bin, calls } = await fakeSystem({ uid: 0, aptGet: true });
      const r = await ensure(bin);
      assert.equal(r.code, 0, r.stderr);
      const log = await calls();
      assert.match(log, /^apt-get update -q$/m);
      assert.match(
        log,
        new RegExp(`^apt-get install -y -q --no-install-recommends ${program}\\nDEBIAN_FRONTEND=noninteractive$`, 'm'),
      );
      assert.ok(existsSync(path.join(bin, program)));
    });

    test('with passwordless sudo: installs through sudo -n', async () => {
      const { bin, calls } = await fakeSystem({ uid: 1000, aptGet: true, sudo: 'passwordless' });
      assert.equal((await ensure(bin)).code, 0);
      assert.match(
        await calls(),
        new RegExp(
          `^sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ${program}$`,
          'm',
        ),
      );
    });

    test('sudo would ask for a password: stops at once with the command to run, installs nothing', async () => {
      const { bin, calls } = await fakeSystem({ uid: 1000, aptGet: true, sudo: 'password' });
      const r = await ensure(bin);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`needs ${program}[^]*\\n {2}sudo apt-get install ${program}\\n$`));
      assert.doesNotMatch(await calls(), /apt-get/);
    });

    test('a failing install stops with the command to run', async () => {
      const { bin } = await fakeSystem({ uid: 0 });
      await writeFile(path.join(bin, 'apt-get'), '#!/bin/sh\necho "E: Unable to locate package" >&2\nexit 100\n', {
        mode: 0o755,
      });
      const r = await ensure(bin);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`Installing ${program} failed[^]*sudo apt-get install ${program}\\n$`));
    });

    test('no apt-get: stops at once and says what to install', async () => {
      const { bin, calls } = await fakeSystem({ uid: 1000 });
      const r = await ensure(bin);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`npm test needs ${program}`));
      assert.match(r.stderr, advice);
      assert.equal(await calls(), '', 'nothing run');
    });
  });
}
