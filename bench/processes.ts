// The servers the bench drives, each in its own process, and what it reads of them in /proc:
// resident memory and CPU time (all threads of the process).
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const HOOK_TOKEN = 'bench-hook-token-0123456789abcdef';
export const GATEWAY_TOKEN = 'bench-gateway-token-0123456789abcdef';
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** A server under test: where it listens, its process, and how to stop it and remove its files. */
export interface Side {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/** Starts a server whose stdout goes to a file (the gateway logs a line per request; a pipe into
 * this process would spend the load generator's CPU), then waits for its "listening on" line. */
export async function startProcess(
  command: string,
  args: string[],
  logFile: string,
  options: { env?: NodeJS.ProcessEnv; cwd?: string; listening?: RegExp; timeoutMs?: number } = {},
): Promise<{ url: string; child: ChildProcess }> {
  const out = await open(logFile, 'w');
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    stdio: ['ignore', out.fd, out.fd],
    detached: true,
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  await out.close();
  const listening = options.listening ?? /listening on (http:\/\/\S+)/;
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  while (Date.now() < deadline) {
    const m = listening.exec(await readFile(logFile, 'utf8'));
    if (m) return { url: m[1]!, child };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(
    `${path.basename(args[0] ?? command)} did not start: ${(await readFile(logFile, 'utf8')).slice(-2000)}`,
  );
}

/** SIGTERM to the process group, SIGKILL after a grace period. */
export async function stopProcess(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {}
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {}
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

export async function startBare(): Promise<Side> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hookgate-bare-'));
  const { url, child } = await startProcess(process.execPath, ['bench/bare-server.mjs'], path.join(dir, 'bare.log'));
  return {
    url,
    pid: child.pid!,
    async stop() {
      await stopProcess(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const TRANSFORM = `export default (ctx: { payload: any }) => ({ text: 'deploy ' + ctx.payload.service + ' ' + ctx.payload.status });\n`;

/** `top`: other top-level keys (models, agents), replacing the defaults' own. */
export function gatewayConfig(
  hooks: Record<string, unknown>,
  gateway: Record<string, unknown> = {},
  top: Record<string, unknown> = {},
): object {
  return {
    gateway: { auth: { token: GATEWAY_TOKEN }, trustedProxies: ['127.0.0.1'], ...gateway },
    hooks: { enabled: true, token: HOOK_TOKEN, defaultSessionKey: 'hook:bench', ...hooks },
    agents: { defaults: { model: 'echo/echo' }, list: [{ id: 'main', default: true }] },
    channels: { slack: { defaultTo: '#bench' } },
    ...top,
  };
}

/**
 * The compiled standalone gateway, as `npm start` runs it, on a fresh state dir. `root`: the checkout
 * whose bin/hookgate runs (another build of it, for bench/ab.ts).
 */
export async function startHookgate(
  hooks: Record<string, unknown>,
  gateway: Record<string, unknown> = {},
  top: Record<string, unknown> = {},
  root = ROOT,
): Promise<Side & { dir: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hookgate-bench-'));
  await writeFile(path.join(dir, 'gateway.json5'), JSON.stringify(gatewayConfig(hooks, gateway, top)));
  await mkdir(path.join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(path.join(dir, 'hooks', 'transforms', 'bench.ts'), TRANSFORM);
  // The log goes beside the state dir, not into it: the config dir is watched for changes.
  // The launcher `npm start` runs (its Node flags; it execs, so the pid is the gateway's).
  const { url, child } = await startProcess(
    path.join(root, 'bin', 'hookgate'),
    ['gateway', '--state-dir', dir, '--port', '0'],
    `${dir}.log`,
  );
  return {
    url,
    pid: child.pid!,
    dir,
    async stop() {
      await stopProcess(child);
      await rm(dir, { recursive: true, force: true });
      await rm(`${dir}.log`, { force: true });
    },
  };
}

export async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 102.4) / 10;
}

/** CPU time the process has used so far (user + system, all its threads), in microseconds. */
export async function cpuMicros(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
}

/** Samples a process's RSS every 100 ms until stopped; resolves with the highest value seen. */
export function watchRss(pid: number): { stop(): Promise<number> } {
  let peak = 0;
  const timer = setInterval(
    () =>
      void rssMb(pid).then(
        (mb) => (peak = Math.max(peak, mb)),
        () => {},
      ),
    100,
  );
  return {
    async stop() {
      clearInterval(timer);
      return Math.max(peak, await rssMb(pid));
    },
  };
}
