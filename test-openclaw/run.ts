// Integration test: hookgate inside a real OpenClaw gateway (openclaw 2026.9.x on Node 24).
// Run with `tsx test-openclaw/run.ts`. Uses the npm registry (first run only) and loopback, nothing else.
// Checks answers over HTTP and effects through OpenClaw's own gateway API (`openclaw gateway call`).
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sign } from '@octokit/webhooks-methods';
import published from '@octokit/webhooks-examples';
import {
  ensureInstalled,
  gatewayConfig,
  installPlugin,
  openclaw,
  prepareFiles,
  REPO,
  removeFiles,
  startGateway,
  writeConfigAtomic,
  type GatewayFiles,
  type HooksBlock,
  type RunningGateway,
} from './openclaw-env.ts';
import { moveInSuite } from './move-in.ts';
import { startRedis, type RedisServer } from '../test/helpers/redis-server.ts';
// The promises inside OpenClaw (durability, reloads, stop, thinking/timeout, agent tools), its own gateway.
import './runtime.ts';
// After the 200: the admin API, the agent tools over it, provider failures as OpenClaw reports them.
import './after-the-200.ts';
// Reply deliveries through OpenClaw's Telegram channel and a fake Bot API: retries and dead letters.
import './channel-retries.ts';
// What a hook may spend: budgets and digests, bursts, session retention, fallback channels, a 200.
import './spend.ts';
// The console (the owner's web page) at /hookgate/ui/ in a real Chromium.
import './console.ts';
// A standalone door on Redis, OpenClaw as the assistant taking what it queued.
import './door-anywhere.ts';
import { spawnGateway, tempStateDir, writeConfig } from '../test/helpers/spawn-gateway.ts';

/** The whole run is bounded (first-time install, gateway starts, checks and shutdowns), with room for a busy host. */
const WATCHDOG_MS = Number(process.env.HOOKGATE_OPENCLAW_TIMEOUT_MS ?? 30 * 60_000);
const nonce = Math.random().toString(36).slice(2, 8);
const GITHUB_SECRET = `github-secret-${nonce}`;

const HOOKS: HooksBlock = {
  enabled: true,
  token: `hook-a-${nonce}-0123456789`,
  path: '/hooks',
  defaultSessionKey: 'hook:ingress',
  allowedSessionKeyPrefixes: ['hook:'],
  maxBodyBytes: 1024,
  authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
  // The shipped GitHub example, copied from the installed package into OpenClaw's transforms dir.
  mappings: [
    {
      id: 'github',
      // Pushes and pull requests only: anything else GitHub sends is answered 200 ignored.
      match: { path: 'github', events: ['push', 'pull_request'] },
      action: 'agent',
      deliver: false,
      // The summary stays queued (a heartbeat would take it in), where the test reads it.
      wakeMode: 'next-heartbeat',
      sessionKey: 'hook:github',
      maxBodyBytes: 1 << 20,
      transform: { module: 'github.ts' },
      verify: { scheme: 'github', secret: GITHUB_SECRET },
    },
  ],
};

let files: GatewayFiles;
let gw: RunningGateway | undefined;
/** Shared state with a standalone gateway (hooks.sharedState), checked in the last test. */
let redis: RedisServer | undefined;
/** Where OpenClaw installed the tarball, and what `openclaw plugins inspect hookgate --runtime --json` said. */
let installed: { root: string; inspect: Record<string, any> };

const watchdog = setTimeout(() => {
  process.stderr.write(`test-openclaw: gave up after ${WATCHDOG_MS} ms\n`);
  void (gw?.stop(2_000) ?? Promise.resolve()).finally(() => process.exit(1));
}, WATCHDOG_MS);
watchdog.unref();

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown> | undefined;
}

/** One request; `from` picks the loopback source address (the auth limiter counts per address). */
function post(
  pathname: string,
  body: string,
  opts: {
    token?: string;
    from?: string;
    method?: string;
    idempotencyKey?: string;
    base?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${opts.base ?? gw!.url}${pathname}`,
      {
        method: opts.method ?? 'POST',
        localAddress: opts.from ?? '127.0.0.1',
        headers: {
          'content-type': 'application/json',
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}),
          ...opts.headers,
        },
        timeout: 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> | undefined;
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {}
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer to ${pathname} within 15 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function queuedSystemEvents(): Promise<string[]> {
  const status = await gw!.call('status');
  return (status.queuedSystemEvents as string[] | undefined) ?? [];
}

async function eventually<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms\n${gw?.tail(20)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

before(
  async () => {
    const t0 = Date.now();
    const done = await ensureInstalled();
    if (done.length) process.stderr.write(`test-openclaw: ${done.join(', ')} (${Date.now() - t0} ms)\n`);
    files = await prepareFiles();
    const t2 = Date.now();
    const root = await installPlugin(files);
    const said = await openclaw(files, ['plugins', 'inspect', 'hookgate', '--runtime', '--json']);
    installed = { root, inspect: JSON.parse(said.slice(said.indexOf('{'))) as Record<string, any> };
    process.stderr.write(`test-openclaw: packed, installed and inspected in ${Date.now() - t2} ms\n`);
    const transforms = path.join(files.stateDir, 'hooks', 'transforms');
    await mkdir(transforms, { recursive: true });
    await copyFile(path.join(root, 'transforms-example', 'github.ts'), path.join(transforms, 'github.ts'));
    redis = await startRedis();
    HOOKS.sharedState = { redis: redis.url, keyPrefix: `oc-${nonce}:` };
    const t1 = Date.now();
    gw = await startGateway(files, HOOKS);
    await gw.waitForLine(/hookgate ready/, 120_000);
    process.stderr.write(`test-openclaw: gateway ready in ${Date.now() - t1} ms (port ${files.port})\n`);
  },
  { timeout: 20 * 60_000 },
);

after(async () => {
  await gw?.stop();
  await redis?.stop();
  if (files) await removeFiles(files);
  clearTimeout(watchdog);
});

describe('hookgate inside OpenClaw', { timeout: 5 * 60_000 }, () => {
  const wakeText = `door bell ${nonce}`;

  test("installed from the packed tarball: loaded from OpenClaw's own npm project, built JavaScript, no path into the checkout", () => {
    const plugin = installed.inspect.plugin as Record<string, any>;
    assert.equal(plugin.status, 'loaded', JSON.stringify(installed.inspect.diagnostics));
    assert.equal(plugin.rootDir, installed.root);
    assert.equal(plugin.source, path.join(installed.root, 'dist', 'openclaw.js'));
    // OpenClaw copies the package and its dependencies at every reload: only the transform worker's two.
    const modules = path.dirname(installed.root);
    const packages = readdirSync(modules)
      .filter((name) => !name.startsWith('.'))
      .flatMap((name) =>
        name.startsWith('@') ? readdirSync(path.join(modules, name)).map((n) => `${name}/${n}`) : [name],
      );
    assert.deepEqual(packages.sort(), [`@esbuild/${process.platform}-${process.arch}`, 'esbuild', 'hookgate', 'jiti']);
    assert.equal(plugin.trust?.installSource, 'npm');
    assert.deepEqual(plugin.services, ['hookgate']);
    assert.ok(!JSON.stringify(installed.inspect).includes(REPO), 'nothing points into the checkout');
  });

  test('a signed GitHub delivery runs through the shipped example transform inside OpenClaw', async () => {
    const examples = published as unknown as { name: string; examples: Record<string, any>[] }[];
    const push = examples.find((e) => e.name === 'push')!.examples.find((e) => e.head_commit)!;
    const body = JSON.stringify(push);
    const headers = {
      'x-github-event': 'push',
      'x-github-delivery': `delivery-${nonce}`,
      'x-hub-signature-256': await sign(GITHUB_SECRET, body),
    };
    // From an address of its own: the forged delivery counts as an auth failure there.
    const from = '127.0.0.5';
    const forged = await post('/hooks/github', body, {
      from,
      headers: { ...headers, 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
    });
    assert.equal(forged.status, 401, forged.text);
    assert.equal(forged.json?.code, 'signature_invalid');
    const r = await post('/hooks/github', body, { from, headers });
    assert.equal(r.status, 202, r.text);
    assert.match(String(r.json?.runId), /^[0-9a-f-]{36}$/);
    // The transform's message is the run's input in OpenClaw: the repository and the pusher from the payload.
    const said = await eventually('the GitHub run in agent:main:hook:github', 60_000, async () => {
      const history = await gw!.call('chat.history', { sessionKey: 'agent:main:hook:github' });
      const text = JSON.stringify(history);
      return text.includes(String(push.repository.full_name)) ? text : undefined;
    });
    assert.ok(said.includes(String(push.sender.login)), said.slice(0, 2000));
    const summary = await eventually('the GitHub run summary', 90_000, async () =>
      (await queuedSystemEvents()).find((e) => e.startsWith('Hook GitHub (')),
    );
    assert.match(summary, /^Hook GitHub \(error\): \S/);
  });

  test('a signed GitHub delivery the filters leave out is answered 200 ignored inside OpenClaw, acting on nothing', async () => {
    const examples = published as unknown as { name: string; examples: Record<string, any>[] }[];
    const star = examples.find((e) => e.name === 'star')!.examples[0]!;
    const body = JSON.stringify(star);
    const r = await post('/hooks/github', body, {
      from: '127.0.0.6',
      headers: {
        'x-github-event': 'star',
        'x-github-delivery': `star-${nonce}`,
        'x-hub-signature-256': await sign(GITHUB_SECRET, body),
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { ok: true, ignored: true });
    // Seen as ignored in the request log and the metrics, with no run for it.
    const log = await post('/hookgate/api/requests', '', { method: 'GET', token: files.gatewayToken });
    const entries = (log.json?.requests ?? []) as Record<string, unknown>[];
    const entry = entries.find((e) => e.mapping === 'github' && e.ignored === true);
    assert.ok(entry, log.text.slice(0, 2000));
    assert.equal(entry.status, 200);
    const metrics = await post('/hookgate/metrics', '', { method: 'GET', token: files.gatewayToken });
    assert.match(metrics.text, /^hookgate_reined_total\{[^}]*reason="ignored"[^}]*\} 1$/m);
  });

  test('wake: 200, and the event is queued on the main session in OpenClaw', async () => {
    const r = await post('/hooks/wake', JSON.stringify({ text: wakeText, mode: 'next-heartbeat' }), {
      token: HOOKS.token,
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { ok: true, mode: 'next-heartbeat' });
    assert.match(String(r.headers['content-type']), /^application\/json/);
    const events = await queuedSystemEvents();
    assert.ok(events.includes(wakeText), `status.queuedSystemEvents: ${JSON.stringify(events)}`);
  });

  test('agent: 202 with a runId, a run in OpenClaw, and an error summary on the main session', async () => {
    const name = `probe-${nonce}`;
    const r = await post(
      '/hooks/agent',
      JSON.stringify({ message: 'Say hello.', name, deliver: false, wakeMode: 'next-heartbeat' }),
      {
        token: HOOKS.token,
      },
    );
    assert.equal(r.status, 202, r.text);
    assert.equal(r.json?.ok, true);
    assert.match(String(r.json?.runId), /^[0-9a-f-]{36}$/);
    // The run reached OpenClaw: its session exists there.
    await eventually('session agent:main:hook:ingress in sessions.list', 60_000, async () => {
      const list = await gw!.call('sessions.list');
      const keys = ((list.sessions as { key?: string }[] | undefined) ?? []).map((s) => s.key);
      return keys.includes('agent:main:hook:ingress') ? true : undefined;
    });
    // No model is reachable (no credentials, no network): the run fails inside OpenClaw and says so.
    const summary = await eventually('the run summary', 90_000, async () =>
      (await queuedSystemEvents()).find((e) => e.startsWith(`Hook ${name} (`)),
    );
    assert.match(summary, new RegExp(`^Hook ${name} \\(error\\): \\S`));
  });

  test('agent with an Idempotency-Key twice: one run; the second answer is the first, marked duplicate', async () => {
    const body = JSON.stringify({
      message: 'Once only.',
      name: `idem-${nonce}`,
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    const first = await post('/hooks/agent', body, { token: HOOKS.token, idempotencyKey: `idem-${nonce}` });
    assert.equal(first.status, 202, first.text);
    const again = await post('/hooks/agent', body, { token: HOOKS.token, idempotencyKey: `idem-${nonce}` });
    assert.equal(again.status, 202, again.text);
    assert.deepEqual(again.json, { ...first.json, duplicate: true });
    assert.equal(again.headers['x-hookgate-duplicate'], '1');
  });

  test('wake now: 200, and OpenClaw runs a heartbeat for the main session', async () => {
    const from = gw!.lines.length;
    const r = await post('/hooks/wake', JSON.stringify({ text: `wake now ${nonce}` }), { token: HOOKS.token });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { ok: true, mode: 'now' });
    await gw!.waitForLine(
      /chatId=heartbeat.*sessionKey=agent:main:main|sessionKey=agent:main:main.*heartbeat/,
      60_000,
      from,
    );
  });

  test('GET /hookgate/metrics: behind OpenClaw gateway auth, the plugin registry', async () => {
    const open = await post('/hookgate/metrics', '', { method: 'GET' });
    assert.equal(open.status, 401, open.text);
    const hookToken = await post('/hookgate/metrics', '', { method: 'GET', token: HOOKS.token });
    assert.equal(hookToken.status, 401, hookToken.text);
    const r = await post('/hookgate/metrics', '', { method: 'GET', token: files.gatewayToken });
    assert.equal(r.status, 200, r.text);
    assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(r.text, /^hookgate_requests_total\{endpoint="wake",mapping="",status="200"\} [1-9]/m);
  });

  test('refusals: 401, 400 (query token, bad JSON, bad payload), 404, 405, 413', async () => {
    const bad = await post('/hooks/wake', JSON.stringify({ text: 'x' }), { token: 'wrong-token' });
    assert.equal(bad.status, 401);
    assert.equal(bad.json?.code, 'unauthorized');

    const query = await post(`/hooks/wake?token=${HOOKS.token}`, JSON.stringify({ text: 'x' }), { token: HOOKS.token });
    assert.equal(query.status, 400);
    assert.equal(query.json?.code, 'token_in_query');

    const notJson = await post('/hooks/wake', 'text=hello', { token: HOOKS.token });
    assert.equal(notJson.status, 400);
    assert.equal(notJson.json?.code, 'invalid_json');

    const noText = await post('/hooks/wake', JSON.stringify({ mode: 'now' }), { token: HOOKS.token });
    assert.equal(noText.status, 400);
    assert.equal(noText.json?.code, 'invalid_payload');

    const unknown = await post('/hooks/nope', JSON.stringify({ text: 'x' }), { token: HOOKS.token });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json?.code, 'not_found');

    const get = await post('/hooks/wake', '', { token: HOOKS.token, method: 'GET' });
    assert.equal(get.status, 405);
    assert.equal(get.headers.allow, 'POST');

    const big = await post('/hooks/wake', JSON.stringify({ text: 'x'.repeat(2000) }), { token: HOOKS.token });
    assert.equal(big.status, 413);
    assert.equal(big.json?.code, 'payload_too_large');
  });

  test('config edit applies without restarting OpenClaw or the plugin', async () => {
    const pid = gw!.child.pid;
    const readyBefore = gw!.count(/hookgate ready/);
    // An event queued before the edit: a restart would lose it (OpenClaw keeps the queue in memory).
    const marker = `before edit ${nonce}`;
    const pre = await post('/hooks/wake', JSON.stringify({ text: marker, mode: 'next-heartbeat' }), {
      token: HOOKS.token,
    });
    assert.equal(pre.status, 200, pre.text);
    const next: HooksBlock = { ...HOOKS, token: `hook-b-${nonce}-0123456789`, maxBodyBytes: 8192 };
    const oldToken = HOOKS.token;
    await writeConfigAtomic(files.configPath, gatewayConfig(files, next));
    HOOKS.token = next.token;
    // The old token with a 2000-byte body: 413 while the old config holds, 401 once the new one applies.
    const from = '127.0.0.3';
    const answer = await eventually('the new config', 30_000, async () => {
      const r = await post('/hooks/wake', JSON.stringify({ text: 'y'.repeat(2000) }), { token: oldToken, from });
      return r.status === 413 ? undefined : r;
    });
    assert.equal(answer.status, 401, answer.text);
    const ok = await post('/hooks/wake', JSON.stringify({ text: `big ${'z'.repeat(2000)}`, mode: 'next-heartbeat' }), {
      token: next.token,
      from,
    });
    assert.equal(ok.status, 200, ok.text);
    // Same process, service never restarted, OpenClaw's in-memory event queue intact.
    assert.equal(gw!.child.pid, pid);
    assert.equal(gw!.child.exitCode, null);
    assert.equal(gw!.count(/hookgate ready/), readyBefore);
    assert.ok((await queuedSystemEvents()).includes(marker), 'the event queued before the edit is still there');
    assert.equal(gw!.count(/config reload skipped|invalid config/i), 0, gw!.tail(20));
  });

  test('429: an address is locked after repeated failures, even with the right token', async () => {
    const from = '127.0.0.2';
    for (let i = 0; i < 3; i++) {
      const r = await post('/hooks/wake', JSON.stringify({ text: 'x' }), { token: `wrong-${i}`, from });
      assert.equal(r.status, 401);
    }
    const locked = await post('/hooks/wake', JSON.stringify({ text: 'x' }), { token: HOOKS.token, from });
    assert.equal(locked.status, 429, locked.text);
    assert.equal(locked.json?.code, 'rate_limited');
    assert.ok(Number(locked.headers['retry-after']) > 0);
    // Another address is not affected.
    const other = await post('/hooks/wake', JSON.stringify({ text: `other ${nonce}`, mode: 'next-heartbeat' }), {
      token: HOOKS.token,
    });
    assert.equal(other.status, 200, other.text);
  });

  test('shared on Redis with a standalone gateway: its keys are duplicates here, its locks hold here', async () => {
    const dir = await tempStateDir();
    await writeConfig(dir, {
      hooks: { token: HOOKS.token, authRateLimit: HOOKS.authRateLimit, sharedState: HOOKS.sharedState },
    });
    const standalone = await spawnGateway(dir);
    try {
      const body = JSON.stringify({ text: `shared once ${nonce}`, mode: 'next-heartbeat' });
      const key = `shared-${nonce}`;
      const first = await post('/hooks/wake', body, { token: HOOKS.token, idempotencyKey: key, base: standalone.url });
      assert.equal(first.status, 200, first.text);
      const here = await post('/hooks/wake', body, { token: HOOKS.token, idempotencyKey: key });
      assert.equal(here.status, 200, here.text);
      assert.deepEqual(here.json, { ...first.json, duplicate: true });
      assert.ok(!(await queuedSystemEvents()).includes(`shared once ${nonce}`), 'not enqueued in OpenClaw');

      const from = '127.0.0.4';
      for (let i = 0; i < 3; i++) {
        const r = await post('/hooks/wake', '{"text":"x"}', { token: `wrong-${i}`, from, base: standalone.url });
        assert.equal(r.status, 401);
      }
      const locked = await eventually('the lock from the standalone gateway', 5_000, async () => {
        const r = await post('/hooks/wake', '{"text":"x"}', { token: HOOKS.token, from });
        return r.status === 429 ? r : undefined;
      });
      assert.equal(locked.json?.code, 'rate_limited');
    } finally {
      await standalone.stop();
    }
  });
});

moveInSuite(post, async (running) => ((await running.call('status')).queuedSystemEvents as string[] | undefined) ?? []);
