// BENCH_PEERS=openclaw: a real OpenClaw gateway with its built-in hooks, driven beside hookgate in the
// same run. It runs from the install `npm run test:openclaw` keeps (Node 24 and openclaw in the cache).
import { spawn } from 'node:child_process';
import {
  NODE24,
  OPENCLAW_BIN,
  ensureInstalled,
  gatewayEnv,
  killStragglers,
  prepareFiles,
  quietGatewayConfig,
  removeFiles,
  writeConfigAtomic,
} from '../test-openclaw/openclaw-env.ts';
import { HOOK_TOKEN, stopProcess, type Side } from './processes.ts';

/** How OpenClaw's built-in hooks lock an address: 20 failures within a minute, locked for a minute. */
export const OPENCLAW_LOCKOUT_FAILURES = 20;

export async function startOpenClaw(): Promise<Side> {
  await ensureInstalled();
  const files = await prepareFiles();
  const quiet = quietGatewayConfig(files);
  await writeConfigAtomic(files.configPath, {
    ...quiet,
    // As for hookgate: the bench is the proxy, so X-Forwarded-For names the client.
    gateway: { ...quiet.gateway, trustedProxies: ['127.0.0.1'] },
    hooks: { enabled: true, token: HOOK_TOKEN, path: '/hooks' },
  });
  const child = spawn(NODE24, [OPENCLAW_BIN, 'gateway', 'run', '--port', String(files.port), '--bind', 'loopback'], {
    env: gatewayEnv(files),
    cwd: files.dir,
    detached: true,
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${files.port}`;
  const stop = async (): Promise<void> => {
    await stopProcess(child, 20_000);
    // Its helper processes run in a process group of their own.
    killStragglers(files.stateDir);
    await removeFiles(files);
  };
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/hooks/wake`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
        body: '{"text":"bench probe","mode":"next-heartbeat"}',
      });
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {}
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error('OpenClaw did not start serving its hooks');
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return { url, pid: child.pid!, stop };
}

/** Locks an address on OpenClaw's built-in hooks (its lock lasts a minute: done before each round). */
export async function lockOnOpenClaw(url: string, address: string): Promise<void> {
  for (let i = 0; i <= OPENCLAW_LOCKOUT_FAILURES; i++) {
    const res = await fetch(`${url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong', 'content-type': 'application/json', 'x-forwarded-for': address },
      body: '{}',
    });
    await res.arrayBuffer();
  }
}
