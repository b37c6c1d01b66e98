// Runs the real `hookgate gateway` process (as `npm start` does) on port 0 with a temp state dir.
// Every child has bounds: one that does not listen within START_BOUND_MS, or does not exit within
// EXIT_BOUND_MS of being stopped, is killed and the helper rejects; children still alive when the
// test file's process exits are killed with it. A slow machine fails a test, never hangs the suite.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './temp-dir.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The CLI from source, through tsx; the build test passes the compiled one instead. */
export const SOURCE_CLI = ['--import', 'tsx', path.join(ROOT, 'plugin', 'hosts', 'standalone', 'cli', 'index.ts')];

/** How long a gateway may take to listen: generous, for a busy machine (2 shared cores). */
export const START_BOUND_MS = 60_000;
/** How long a stopped child may take to exit; a stop finishes within gateway.shutdownGraceSeconds. */
export const EXIT_BOUND_MS = 60_000;

export const HOOK_TOKEN = 'spawned-hook-token-0123456789';
export const GATEWAY_TOKEN = 'spawned-gateway-token-0123456789';

export interface SpawnedGateway {
  url: string;
  child: ChildProcess;
  stateDir: string;
  configPath: string;
  output(): string;
  /** GET on the admin API with the gateway token. */
  admin(p: string): Promise<any>;
  hook(p: string, body: unknown, token?: string): Promise<{ status: number; body: any }>;
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function tempStateDir(): Promise<string> {
  return tempDir('hookgate-gw-');
}

/** A config file with known tokens; `extra` is merged in at the top level. */
export async function writeConfig(stateDir: string, extra: Record<string, unknown> = {}): Promise<string> {
  const configPath = path.join(stateDir, 'gateway.json5');
  const { hooks, gateway, ...rest } = extra as { hooks?: object; gateway?: object };
  const config = {
    gateway: { auth: { token: GATEWAY_TOKEN }, shutdownGraceSeconds: 1, ...gateway },
    hooks: { enabled: true, token: HOOK_TOKEN, ...hooks },
    agents: { list: [{ id: 'main', default: true }] },
    channels: { telegram: { defaultTo: '12345' } },
    ...rest,
  };
  await writeFile(configPath, JSON.stringify(config, null, 2));
  return configPath;
}

/**
 * openFiles: run the gateway under that limit on open descriptors (prlimit, util-linux). startBoundMs:
 * a gateway not listening by then is killed and the promise rejects. runUnder: a command the gateway
 * runs under (strace and its options); `child` is then that command's process.
 */
export async function spawnGateway(
  stateDir: string,
  args: string[] = [],
  cli: string[] = SOURCE_CLI,
  openFiles?: number,
  startBoundMs = START_BOUND_MS,
  runUnder: string[] = [],
): Promise<SpawnedGateway> {
  const configPath = path.join(stateDir, 'gateway.json5');
  const command = [process.execPath, ...cli, 'gateway', '--state-dir', stateDir, '--port', '0', ...args];
  if (openFiles !== undefined) command.unshift('prlimit', `--nofile=${openFiles}:${openFiles}`, '--');
  command.unshift(...runUnder);
  const { child, output, exited } = spawnCapturing(command[0]!, command.slice(1));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway did not start within ${startBoundMs} ms; killed:\n${output()}`));
    }, startBoundMs);
    const onData = (): void => {
      const m = /listening on (http:\/\/\S+)/.exec(output());
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening:\n${output()}`));
    });
  });
  return {
    url,
    child,
    stateDir,
    configPath,
    output,
    async admin(p) {
      const res = await fetch(url + p, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
      const body = await res.json();
      if (res.status !== 200) throw new Error(`GET ${p}: ${res.status} ${JSON.stringify(body)}`);
      return body;
    },
    async hook(p, body, token = HOOK_TOKEN) {
      const res = await fetch(url + p, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exitWithin(child, exited, EXIT_BOUND_MS, 'gateway');
    },
  };
}

/**
 * Resolves with the exit code once the child has exited; one still running after `boundMs` is
 * killed and the promise rejects (naming `what`), so a stuck child fails its test instead of hanging it.
 */
export async function exitWithin(
  child: ChildProcess,
  exited: Promise<number | null>,
  boundMs: number,
  what: string,
): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not exit within ${boundMs} ms; killed`));
    }, boundMs);
  });
  try {
    return await Promise.race([exited, bound]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Children still running when the test file's process exits go with it, also when the test runner
 * ends that process with SIGTERM (a file past --test-timeout), which skips 'exit' handlers.
 */
const running = new Set<ChildProcess>();
const killRunning = (): void => {
  for (const child of running) child.kill('SIGKILL');
};
process.once('exit', killRunning);
process.once('SIGTERM', () => {
  killRunning();
  process.exit(143);
});

/** A child process from the repo's root whose stdout and stderr are gathered into one text. */
export function spawnCapturing(
  command: string,
  args: string[],
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** Polls until `check` returns a truthy value. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const MAIN = encodeURIComponent('agent:main:main');
