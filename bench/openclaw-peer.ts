// BENCH_PEERS=openclaw: real OpenClaw gateways driven beside hookgate in the same run, from the install
// `npm run test:openclaw` keeps (Node 24 and openclaw in the cache). Two start, on the same config:
// one with the packed hookgate plugin enabled (its hooks at PLUGIN_PATH, OpenClaw's built-in hooks at
// /hooks, both driven), and one with the plugin installed but disabled (its built-in hooks driven too),
// so the RSS the plugin adds and what it does to the built-in hooks are read in the same run. Both
// run their agent turns against a fake model on loopback (one per gateway), so the agent row's runs
// end as they would with a real provider, not in a missing key's error.
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import {
  NODE24,
  OPENCLAW_BIN,
  ensureInstalled,
  gatewayEnv,
  installPlugin,
  killStragglers,
  prepareFiles,
  quietGatewayConfig,
  removeFiles,
  withFakeModel,
  writeConfigAtomic,
} from '../test-openclaw/openclaw-env.ts';
import { startFakeProvider, streamReply } from '../test/helpers/fake-provider.ts';
import { HOOK_TOKEN, stopProcess, type Side } from './processes.ts';
import { GITHUB_MAPPING, GITHUB_TEMPLATE } from './scenarios.ts';

/** How OpenClaw's built-in hooks lock an address: 20 failures within a minute, locked for a minute. */
export const OPENCLAW_LOCKOUT_FAILURES = 20;

/** Where the plugin's hooks are served inside OpenClaw: a path of their own beside the built-in /hooks. */
export const PLUGIN_PATH = '/hookgate-hooks';

/**
 * The plugin's config inside OpenClaw: the lockout set as OpenClaw's own (20 failures a minute,
 * locked for a minute), so both receivers are sent the same refusals; the signed mapping as the
 * standalone gateway's.
 */
const PLUGIN_HOOKS = {
  enabled: true,
  token: HOOK_TOKEN,
  path: PLUGIN_PATH,
  defaultSessionKey: 'hook:bench',
  authRateLimit: { maxFailures: OPENCLAW_LOCKOUT_FAILURES, windowSeconds: 60, lockoutSeconds: 60 },
  mappings: [GITHUB_MAPPING],
};

/** OpenClaw's built-in hooks: the token, and the signed row's mapping (they verify no signature). */
const BUILTIN_HOOKS = {
  enabled: true,
  token: HOOK_TOKEN,
  path: '/hooks',
  mappings: [
    {
      id: 'github',
      match: { path: 'github' },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: GITHUB_TEMPLATE,
    },
  ],
};

export interface OpenClawSide extends Side {
  /** Whether the hookgate plugin is enabled in it. */
  plugin: boolean;
}

async function probe(url: string): Promise<number> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
      body: '{"text":"bench probe","mode":"next-heartbeat"}',
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/**
 * Starts one OpenClaw gateway with the plugin installed, enabled or not (the rest of the config the
 * same). `cpuProfileDir`: run it with `--cpu-prof` into that folder (written when it exits).
 */
export async function startOpenClaw(options: { plugin: boolean; cpuProfileDir?: string }): Promise<OpenClawSide> {
  await ensureInstalled();
  const files = await prepareFiles();
  await installPlugin(files);
  const quiet = quietGatewayConfig(files);
  // Kept out of the bench's figures: it runs in this process, not in OpenClaw's.
  const model = await startFakeProvider((_req, res) => streamReply(res, 'ok'));
  const config = withFakeModel(quiet, model.baseUrl);
  await writeConfigAtomic(files.configPath, {
    ...config,
    // As for hookgate: the bench is the proxy, so X-Forwarded-For names the client.
    gateway: { ...quiet.gateway, trustedProxies: ['127.0.0.1'] },
    hooks: BUILTIN_HOOKS,
    plugins: {
      // As test-openclaw does, to start faster on a busy machine; the same list on both gateways.
      allow: ['hookgate'],
      entries: { hookgate: { enabled: options.plugin, config: PLUGIN_HOOKS } },
    },
  });
  const profile = options.cpuProfileDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfileDir] : [];
  if (options.cpuProfileDir) await mkdir(options.cpuProfileDir, { recursive: true });
  const child = spawn(
    NODE24,
    [...profile, OPENCLAW_BIN, 'gateway', 'run', '--port', String(files.port), '--bind', 'loopback'],
    { env: gatewayEnv(files), cwd: files.dir, detached: true, stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${files.port}`;
  const stop = async (): Promise<void> => {
    await stopProcess(child, 20_000);
    // Its helper processes run in a process group of their own.
    killStragglers(files.stateDir);
    await removeFiles(files);
    await model.close();
  };
  const deadline = Date.now() + 240_000;
  for (;;) {
    const builtIn = await probe(`${url}/hooks/wake`);
    const plugin = options.plugin ? await probe(`${url}${PLUGIN_PATH}/wake`) : 200;
    if (builtIn === 200 && plugin === 200) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`OpenClaw (plugin ${options.plugin ? 'on' : 'off'}) did not start serving its hooks`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return { url, pid: child.pid!, stop, plugin: options.plugin };
}

/**
 * Locks an address on a receiver whose hooks live under `hooksPath` (both lock for a minute: done
 * before each round).
 */
export async function lockAddress(url: string, hooksPath: string, address: string): Promise<void> {
  for (let i = 0; i <= OPENCLAW_LOCKOUT_FAILURES; i++) {
    const res = await fetch(`${url}${hooksPath}/wake`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong', 'content-type': 'application/json', 'x-forwarded-for': address },
      body: '{}',
    });
    await res.arrayBuffer();
  }
}
