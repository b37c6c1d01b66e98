// `npm run bench`: the standalone gateway against a bare node:http server in the same run, each in
// its own process, driven alternately by autocannon (32 connections, no pipelining).
// Prints req/s, p50/p99 latency and the ratio to bare per scenario (means of alternating rounds),
// the gateway's RSS after each scenario and its peak during it,
// and writes every figure to bench/results/latest.json.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import { startRedis } from '../test/helpers/redis-server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Bare and gateway alternate this many times per scenario; figures are the means (this VM is noisy). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = 32;
/** Runs only the scenarios whose name contains this text (e.g. BENCH_ONLY=429); all by default. */
const ONLY = process.env.BENCH_ONLY ?? '';
const HOOK_TOKEN = 'bench-hook-token-0123456789abcdef';
/** Node flags of `npm start`, so the bench measures the gateway as it is run. */
const START_FLAGS = (
  /node ((?:--\S+ )*)dist\/plugin\/hosts\/standalone\/cli\.js gateway/.exec(
    (JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts
      .start,
  )?.[1] ?? ''
)
  .split(' ')
  .filter(Boolean);
const GATEWAY_TOKEN = 'bench-gateway-token-0123456789abcdef';

const started: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of started) c.kill('SIGTERM');
});

interface Proc {
  url: string;
  child: ChildProcess;
}

/** Starts a server whose stdout goes to a file (the gateway logs a line per request; a pipe into
 * this process would spend the load generator's CPU), then waits for its "listening on" line. */
async function startProcess(args: string[], logFile: string): Promise<Proc> {
  const out = await open(logFile, 'w');
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', out.fd, 'inherit'] });
  started.push(child);
  await out.close();
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  for (let i = 0; i < 300; i++) {
    const m = /listening on (http:\/\/\S+)/.exec(await readFile(logFile, 'utf8'));
    if (m) return { url: m[1]!, child };
    if (exited !== undefined) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${args.join(' ')} did not start: ${await readFile(logFile, 'utf8')}`);
}

async function startGateway(hooks: Record<string, unknown>): Promise<Proc & { dir: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hookgate-bench-'));
  const config = {
    gateway: { auth: { token: GATEWAY_TOKEN }, trustedProxies: ['127.0.0.1'] },
    hooks: { enabled: true, token: HOOK_TOKEN, defaultSessionKey: 'hook:bench', ...hooks },
    agents: { defaults: { model: 'echo/echo' }, list: [{ id: 'main', default: true }] },
    channels: { slack: { defaultTo: '#bench' } },
  };
  await writeFile(path.join(dir, 'gateway.json5'), JSON.stringify(config));
  await mkdir(path.join(dir, 'hooks', 'transforms'), { recursive: true });
  await writeFile(path.join(dir, 'hooks', 'transforms', 'bench.ts'), TRANSFORM);
  // The log goes beside the state dir, not into it: the config dir is watched for changes.
  // The compiled CLI, as `npm start` runs it.
  const p = await startProcess(
    [...START_FLAGS, 'dist/plugin/hosts/standalone/cli.js', 'gateway', '--state-dir', dir, '--port', '0'],
    `${dir}.log`,
  );
  return { ...p, dir };
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 102.4) / 10;
}

interface Scenario {
  name: string;
  path: string;
  body: string;
  headers?: Record<string, string>;
  /** Which gateway serves it ('redis': the main one's config with hooks.sharedState). */
  target: 'main' | 'locked' | 'redis';
  /** Ratio the issue asks for (undefined: reported only). */
  goal?: number;
  expect: number;
  /** A fresh Idempotency-Key on every request. */
  freshKeys?: boolean;
}

const GITHUB_SECRET = 'bench-github-webhook-secret-0123';
const githubBody = JSON.stringify({
  action: 'completed',
  workflow_run: {
    name: 'CI',
    head_branch: 'main',
    conclusion: 'success',
    html_url: 'https://github.com/o/r/actions/runs/1',
  },
  repository: { full_name: 'o/r' },
  sender: { login: 'ada' },
});
/** What GitHub sends: the body's HMAC-SHA256 in X-Hub-Signature-256, the delivery and event names. */
const githubHeaders = {
  'content-type': 'application/json',
  'x-github-event': 'workflow_run',
  'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
  'x-hub-signature-256': `sha256=${createHmac('sha256', GITHUB_SECRET).update(githubBody).digest('hex')}`,
};

const TRANSFORM = `export default (ctx: { payload: any }) => ({ text: 'deploy ' + ctx.payload.service + ' ' + ctx.payload.status });\n`;
const MAPPINGS = [
  {
    id: 'tpl',
    match: { path: 'tpl' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate: 'CI {{pipeline.name}} #{{pipeline.run}}: {{status}} by {{actor.login}} ({{headers.x-ci}})',
  },
  { id: 'tr', match: { path: 'tr' }, action: 'wake', wakeMode: 'next-heartbeat', transform: { module: 'bench.ts' } },
  {
    id: 'github',
    match: { path: 'github' },
    action: 'wake',
    wakeMode: 'next-heartbeat',
    textTemplate:
      '{{repository.full_name}}: {{workflow_run.name}} on {{workflow_run.head_branch}} {{workflow_run.conclusion}} ({{headers.x-github-event}})',
    verify: { scheme: 'github', secret: GITHUB_SECRET },
  },
];
const bearer = (t: string) => ({ authorization: `Bearer ${t}`, 'content-type': 'application/json' });
const bigBody = JSON.stringify({ text: `large payload ${'x'.repeat(200 * 1024)}`, mode: 'next-heartbeat' });

const scenarios: Scenario[] = [
  {
    name: 'wake (next-heartbeat)',
    path: '/hooks/wake',
    body: '{"text":"bench event","mode":"next-heartbeat"}',
    headers: bearer(HOOK_TOKEN),
    target: 'main',
    goal: 0.8,
    expect: 200,
  },
  {
    name: 'agent accept (echo, deliver off)',
    path: '/hooks/agent',
    body: '{"message":"bench run","deliver":false}',
    headers: bearer(HOOK_TOKEN),
    target: 'main',
    goal: 0.6,
    expect: 202,
  },
  {
    name: 'mapped hook + template',
    path: '/hooks/tpl',
    body: '{"pipeline":{"name":"api","run":812},"status":"green","actor":{"login":"ada"}}',
    headers: { ...bearer(HOOK_TOKEN), 'x-ci': 'ci-1' },
    target: 'main',
    goal: 0.7,
    expect: 200,
  },
  {
    name: 'GitHub-signed mapped hook + template',
    path: '/hooks/github',
    body: githubBody,
    headers: githubHeaders,
    target: 'main',
    goal: 0.6,
    expect: 200,
  },
  {
    name: 'mapped hook + transform',
    path: '/hooks/tr',
    body: '{"service":"api","status":"done"}',
    headers: bearer(HOOK_TOKEN),
    target: 'main',
    goal: 0.4,
    expect: 200,
  },
  {
    name: 'wake with a fresh Idempotency-Key each',
    path: '/hooks/wake',
    body: '{"text":"bench event","mode":"next-heartbeat"}',
    headers: bearer(HOOK_TOKEN),
    target: 'main',
    goal: 0.7,
    expect: 200,
    freshKeys: true,
  },
  {
    name: 'wake, one Idempotency-Key repeated (duplicates)',
    path: '/hooks/wake',
    body: '{"text":"bench event","mode":"next-heartbeat"}',
    headers: { ...bearer(HOOK_TOKEN), 'idempotency-key': 'bench-repeated-key' },
    target: 'main',
    goal: 0.85,
    expect: 200,
  },
  {
    name: '401 wrong token',
    path: '/hooks/wake',
    body: '{"text":"x"}',
    headers: bearer('wrong-token'),
    target: 'main',
    goal: 0.85,
    expect: 401,
  },
  {
    name: '429 locked address',
    path: '/hooks/wake',
    body: '{"text":"x"}',
    headers: { ...bearer(HOOK_TOKEN), 'x-forwarded-for': '203.0.113.9' },
    target: 'locked',
    goal: 0.9,
    expect: 429,
  },
  {
    name: '200 KB body (wake)',
    path: '/hooks/wake',
    body: bigBody,
    headers: bearer(HOOK_TOKEN),
    target: 'main',
    expect: 200,
  },
];

/** Rows measured again against a gateway sharing lockouts and dedupe keys on Redis, in the same run. */
const REDIS_ROWS = [
  'wake (next-heartbeat)',
  'wake with a fresh Idempotency-Key each',
  'wake, one Idempotency-Key repeated (duplicates)',
  '401 wrong token',
];
/** Each such row is followed at once by its Redis twin, so both see the machine in the same state. */
const withRedisRows = scenarios.flatMap((s): Scenario[] =>
  REDIS_ROWS.includes(s.name) ? [s, { ...s, name: `${s.name}, Redis on`, target: 'redis', goal: undefined }] : [s],
);

let keySeq = 0;
/** Sets a key never sent before (the bare server reads the same header). */
const freshKey = (req: { headers: Record<string, string> }) => ({
  ...req,
  headers: { ...req.headers, 'idempotency-key': `bench-${++keySeq}` },
});

function drive(url: string, s: Scenario): Promise<Result> {
  return autocannon({
    url: url + s.path,
    method: 'POST',
    headers: s.headers,
    body: s.body,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: SECONDS,
    ...(s.freshKeys ? { requests: [{ setupRequest: freshKey }] } : {}),
  });
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Means over the rounds (p99: the worst round). */
function figures(runs: Result[]) {
  return {
    reqPerSec: Math.round(mean(runs.map((r) => r.requests.average))),
    p50Ms: mean(runs.map((r) => r.latency.p50)),
    p99Ms: Math.max(...runs.map((r) => r.latency.p99)),
    total: runs.reduce((n, r) => n + r.requests.total, 0),
    /** Answers with a 2xx status per second (for agent runs: accepted, not refused with 503). */
    okPerSec: Math.round(
      mean(runs.map((r) => (r.requests.total ? (r.requests.average * r['2xx']) / r.requests.total : 0))),
    ),
    errors: runs.reduce((n, r) => n + r.errors + r.timeouts, 0),
  };
}

/** Samples a process's RSS every 100 ms until stopped; resolves with the highest value seen. */
function watchRss(pid: number): { stop(): Promise<number> } {
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

/** Rotates the hook token in the config file and polls with the new one until it is accepted. */
async function reloadApplyTimes(
  gw: Proc & { dir: string },
  hooks: Record<string, unknown>,
): Promise<{ samples: number[]; medianMs: number; maxMs: number }> {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    const token = `reload-token-${i}-0123456789abcdef`;
    const config = {
      gateway: { auth: { token: GATEWAY_TOKEN }, trustedProxies: ['127.0.0.1'] },
      hooks: { enabled: true, token, defaultSessionKey: 'hook:bench', ...hooks },
      agents: { defaults: { model: 'echo/echo' }, list: [{ id: 'main', default: true }] },
      channels: { slack: { defaultTo: '#bench' } },
    };
    const started = performance.now();
    await writeFile(path.join(gw.dir, 'gateway.json5'), JSON.stringify(config));
    for (;;) {
      const res = await fetch(`${gw.url}/hooks/wake`, {
        method: 'POST',
        headers: bearer(token),
        body: '{"text":"probe","mode":"next-heartbeat"}',
      });
      await res.arrayBuffer();
      if (res.status === 200) break;
      if (performance.now() - started > 10_000) throw new Error('the reload never applied');
      await new Promise((r) => setTimeout(r, 5));
    }
    samples.push(Math.round(performance.now() - started));
    await new Promise((r) => setTimeout(r, 500));
  }
  const sorted = [...samples].sort((a, b) => a - b);
  return { samples, medianMs: sorted[2]!, maxMs: sorted[4]! };
}

async function main(): Promise<void> {
  await promisify(execFile)(
    process.execPath,
    [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    { cwd: ROOT },
  );
  const bareDir = await mkdtemp(path.join(tmpdir(), 'hookgate-bare-'));
  const bare = await startProcess(['bench/bare-server.mjs'], path.join(bareDir, 'bare.log'));
  // maxFailures is high so the 401 scenario stays 401; the second gateway locks after one failure.
  const mainHooks = {
    maxBodyBytes: 1024 * 1024,
    authRateLimit: { maxFailures: 1_000_000, windowSeconds: 1, lockoutSeconds: 1 },
    mappings: MAPPINGS,
  };
  const gw = await startGateway(mainHooks);
  const locked = await startGateway({ authRateLimit: { maxFailures: 1, windowSeconds: 60, lockoutSeconds: 3600 } });
  const selected = withRedisRows.filter((x) => x.name.includes(ONLY));
  const redis = selected.some((x) => x.target === 'redis') ? await startRedis() : undefined;
  const shared = redis && (await startGateway({ ...mainHooks, sharedState: { redis: redis.url } }));
  await fetch(`${locked.url}/hooks/wake`, {
    method: 'POST',
    headers: { ...bearer('wrong'), 'x-forwarded-for': '203.0.113.9' },
    body: '{}',
  });

  console.log(
    `hookgate benchmark: ${ROUNDS} x ${SECONDS} s per side and scenario (alternating), ${CONNECTIONS} connections, no pipelining`,
  );
  console.log(
    `machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}\n`,
  );
  const rows = [];
  for (const s of selected) {
    const target = s.target === 'main' ? gw : s.target === 'redis' ? shared! : locked;
    // Warm up both sides briefly, then measure bare and gateway alternately.
    await autocannon({
      url: target.url + s.path,
      method: 'POST',
      headers: s.headers,
      body: s.body,
      connections: CONNECTIONS,
      duration: 1,
    });
    await autocannon({
      url: bare.url + s.path,
      method: 'POST',
      headers: s.headers,
      body: s.body,
      connections: CONNECTIONS,
      duration: 1,
    });
    const bareRuns: Result[] = [];
    const gatewayRuns: Result[] = [];
    const rss = watchRss(target.child.pid!);
    for (let round = 0; round < ROUNDS; round++) {
      bareRuns.push(await drive(bare.url, s));
      gatewayRuns.push(await drive(target.url, s));
    }
    const peakRssMb = await rss.stop();
    const status = await fetch(target.url + s.path, { method: 'POST', headers: s.headers, body: s.body });
    await status.arrayBuffer();
    const b = figures(bareRuns);
    const g = figures(gatewayRuns);
    const row = {
      scenario: s.name,
      bare: b,
      gateway: { ...g, non2xx: gatewayRuns.reduce((n, r) => n + r.non2xx, 0), statusSeen: status.status },
      ratio: Math.round((g.reqPerSec / b.reqPerSec) * 100) / 100,
      /** For scenarios that expect 2xx: answers with 2xx per second, against bare's answers. */
      okRatio: s.expect < 300 ? Math.round((g.okPerSec / b.reqPerSec) * 100) / 100 : undefined,
      goal: s.goal,
      rssMb: await rssMb(target.child.pid!),
      peakRssMb,
    };
    if (status.status !== s.expect) console.warn(`  ! ${s.name}: expected ${s.expect}, saw ${status.status}`);
    rows.push(row);
    console.log(
      `${s.name.padEnd(34)} gateway ${String(g.reqPerSec).padStart(6)} req/s${row.okRatio !== undefined && g.okPerSec < g.reqPerSec * 0.99 ? ` (2xx ${g.okPerSec}/s, ratio ${row.okRatio.toFixed(2)})` : ''}  p50 ${g.p50Ms.toFixed(1)} ms  p99 ${g.p99Ms} ms | bare ${String(b.reqPerSec).padStart(6)} req/s | ratio ${row.ratio.toFixed(2)}${s.goal ? ` (goal ${s.goal})` : ''} | RSS ${row.rssMb} MB, peak ${row.peakRssMb} MB`,
    );
  }
  const reload = await reloadApplyTimes(gw, mainHooks);
  console.log(
    `\nhot reload: write -> first request served by the new config: median ${reload.medianMs} ms, max ${reload.maxMs} ms (goal < 300 ms)`,
  );

  const result = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    secondsPerRun: SECONDS,
    rounds: ROUNDS,
    connections: CONNECTIONS,
    rows,
    reloadApplyMs: reload,
  };
  await writeFile(path.join(ROOT, 'bench', 'results', 'latest.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log('\nwritten to bench/results/latest.json');
  for (const c of started) c.kill('SIGTERM');
  await redis?.stop();
  await rm(bareDir, { recursive: true, force: true });
  for (const d of [gw.dir, locked.dir, ...(shared ? [shared.dir] : [])]) {
    await rm(d, { recursive: true, force: true });
    await rm(`${d}.log`, { force: true });
  }
}

await main();
