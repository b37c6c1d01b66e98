// bin/hookgate, the launcher behind `npm start`, `npm run cli` and `npx hookgate`: signals sent to npm
// reach the gateway (no orphan left serving), dist/ is rebuilt only when the sources changed, and
// the help names the command the way the user runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, readdir, readFile, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import autocannon from 'autocannon';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitUntil } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { HOOK_TOKEN, writeConfig } from '../helpers/spawn-gateway.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const LAUNCHER = path.join(ROOT, 'bin', 'hookgate');

/** The processes whose parent is pid (every thread's children). */
async function childrenOf(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`);
  const lists = await Promise.all(tasks.map((t) => readFile(`/proc/${pid}/task/${t}/children`, 'utf8')));
  return lists.join(' ').split(/\s+/).filter(Boolean).map(Number);
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} to \`npm start\` stops the gateway after its request in flight, and npm exits 0`, async () => {
    const stateDir = await tempDir('hookgate-npm-start-');
    await writeConfig(stateDir);
    const { HOOKGATE_CONFIG: _config, ...env } = process.env;
    const npm = spawn('npm', ['start', '--', '--port', '0'], {
      cwd: ROOT,
      env: { ...env, HOOKGATE_STATE_DIR: stateDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
    npm.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    try {
      // Long enough for the launcher to rebuild dist/ when the sources are newer.
      await waitUntil(() => /listening on http:\/\/\S+/.test(out), `npm start listening:\n${out}`, 120_000);
      const url = new URL(/listening on (http:\/\/\S+)/.exec(out)![1]!);
      const [gateway] = await childrenOf(npm.pid!);
      assert.ok(gateway, 'npm has a child');
      // The launcher execs: npm's own child is the gateway's Node process, which gets npm's signal.
      assert.match(await readFile(`/proc/${gateway}/cmdline`, 'utf8'), /dist\/hookgate\.js\0gateway\0/);

      // A request in flight: headers and part of the body sent before the signal.
      const body = JSON.stringify({ text: `in flight during ${signal}` });
      const socket = connect(Number(url.port), url.hostname);
      let answer = '';
      socket.on('data', (d: Buffer) => (answer += d.toString()));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(
        `POST /hooks/wake HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n` +
          'Connection: close\r\n\r\n' +
          body.slice(0, 10),
      );
      // 100 Continue: the gateway has read the headers, so the request is in flight.
      await waitUntil(() => answer.includes('100 Continue'), 'the gateway reading the request');
      npm.kill(signal);
      await waitUntil(() => out.includes('shutting down'), `the gateway logs its shutdown:\n${out}`, 10_000);
      socket.end(body.slice(10));
      await closed;
      assert.match(answer, /^HTTP\/1\.1 200 /m, answer);

      assert.equal(await exited, 0, out);
      assert.equal(existsSync(`/proc/${gateway}`), false, 'no gateway left running after npm');
    } finally {
      npm.kill('SIGKILL');
    }
  });
}

/** A copy of what the launcher builds from, with the repository's node_modules, in a temp dir. */
async function scratchCopy(): Promise<string> {
  const dir = await tempDir('hookgate-launcher-');
  for (const part of ['plugin', 'gmail', 'channels', 'schema', 'bin', 'build.mjs', 'package.json'])
    await cp(path.join(ROOT, part), path.join(dir, part), { recursive: true, preserveTimestamps: true });
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

test('the launcher builds dist/ when it is missing or older than the sources, and not otherwise', async () => {
  const dir = await scratchCopy();
  const launcher = path.join(dir, 'bin', 'hookgate');
  const stamp = path.join(dir, 'dist', '.built');
  const help = async (): Promise<string> => (await run(launcher, ['--help'], { cwd: dir })).stdout;

  assert.match(await help(), /webhook ingress/);
  assert.ok(existsSync(path.join(dir, 'dist', 'hookgate.js')), 'built on first run');
  // A second run with nothing changed leaves the build alone (a build rewrites the stamp).
  const before = (await stat(stamp)).mtimeMs;
  await help();
  assert.equal((await stat(stamp)).mtimeMs, before, 'no build when nothing changed');

  // An edited source is rebuilt before the command runs.
  const cli = path.join(dir, 'plugin', 'hosts', 'standalone', 'cli', 'index.ts');
  await writeFile(cli, (await readFile(cli, 'utf8')).replace('webhook ingress for', 'webhook ingress (edited) for'));
  const later = new Date(before + 2000); // past the stamp even where mtimes are coarse
  await utimes(cli, later, later);
  assert.match(await help(), /webhook ingress \(edited\) for/, 'rebuilt after an edit');
  assert.ok((await stat(stamp)).mtimeMs > before);
});

test('the help names the command as it is run: `npx hookgate` from a clone, `hookgate` when installed', async () => {
  const { npm_command: _npm, ...env } = process.env;
  const withoutGlobal = { ...env, PATH: path.dirname(process.execPath) + path.delimiter + '/usr/bin:/bin' };
  const clone = (await run(LAUNCHER, ['--help'], { env: withoutGlobal })).stdout;
  assert.match(clone, /^Usage: npx hookgate <command> \[options\]$/m);
  assert.match(clone, /Run `npx hookgate help <command>`/);
  assert.match(
    (await run(LAUNCHER, ['help', 'config'], { env: withoutGlobal })).stdout,
    /^Usage: npx hookgate config /m,
  );

  // Installed globally: `hookgate` on the PATH is this launcher (npm links it from its bin dir).
  const globalBin = await tempDir('hookgate-global-bin-');
  await symlink(LAUNCHER, path.join(globalBin, 'hookgate'));
  const installed = { ...env, PATH: globalBin + path.delimiter + withoutGlobal.PATH };
  const global = (await run('hookgate', ['--help'], { env: installed })).stdout;
  assert.match(global, /^Usage: hookgate <command> \[options\]$/m);
  assert.doesNotMatch(global, /npx/);

  // npx from the clone runs the package's bin, and its help says so.
  const npx = (await run('npx', ['hookgate', 'requests', '--help'], { cwd: ROOT })).stdout;
  assert.match(npx, /^Usage: npx hookgate requests /m);
});

test("the launcher fixes glibc's mmap threshold for the gateway; a value in the caller's environment wins", async () => {
  // The exec'd Node process prints what it was given, before the CLI prints its help.
  const printer = '--import=data:text/javascript,console.log(`threshold=${process.env.MALLOC_MMAP_THRESHOLD_}`)';
  const { MALLOC_MMAP_THRESHOLD_: _threshold, ...env } = process.env;
  const given = async (extra: Record<string, string>): Promise<string | undefined> =>
    /^threshold=(.*)$/m.exec(
      (await run(LAUNCHER, ['--help'], { env: { ...env, ...extra, NODE_OPTIONS: printer } })).stdout,
    )?.[1];
  assert.equal(await given({}), '131072');
  assert.equal(await given({ MALLOC_MMAP_THRESHOLD_: '65536' }), '65536');
});

test('the gateway the launcher starts gives its heap back once idle after a burst (gc exposed, one collection logged)', async () => {
  const stateDir = await tempDir('hookgate-idle-gc-');
  await writeConfig(stateDir);
  const gateway = spawn(LAUNCHER, ['gateway', '--state-dir', stateDir, '--port', '0'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  gateway.stdout.on('data', (d: Buffer) => (out += d.toString()));
  gateway.stderr.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await waitUntil(() => /listening on http:\/\/\S+/.test(out), `the gateway listening:\n${out}`, 120_000);
    const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
    // A burst: each request leaves a little on the heap (its request log entry, what was promoted).
    const burst = await autocannon({
      url: `${url}/hooks/wake`,
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
      body: JSON.stringify({ text: 'burst', mode: 'next-heartbeat' }),
      connections: 16,
      amount: 40_000,
    });
    assert.equal(burst['2xx'], 40_000);
    await waitUntil(() => out.includes('memory given back once idle'), `a collection once idle:\n${out}`, 120_000);
    const line = out.split('\n').find((l) => l.includes('memory given back once idle'))!;
    const heap = Number(/heapMb[=":\s]+(\d+)/.exec(line)?.[1]);
    const after = Number(/afterMb[=":\s]+(\d+)/.exec(line)?.[1]);
    assert.ok(after < heap, line);
  } finally {
    gateway.kill('SIGKILL');
  }
});
