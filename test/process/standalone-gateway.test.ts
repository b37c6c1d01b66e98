// The real gateway process: first run, wake and agent effects through the admin API, restarts,
// crashes and graceful shutdown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  eventually,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  MAIN,
  spawnGateway,
  tempStateDir,
  writeConfig,
} from '../helpers/spawn-gateway.ts';
import { startFakeProvider } from '../helpers/fake-provider.ts';

const run = promisify(execFile);
const CLI = ['--import', 'tsx', 'plugin/hosts/standalone/cli/index.ts'];

/** The whole history, page after page (history is paged: the newest entries first come last). */
async function history(gw: { admin(p: string): Promise<any> }, key = 'agent:main:main'): Promise<any[]> {
  const pages: any[][] = [];
  let before: string | undefined;
  do {
    const page = await gw.admin(
      `/api/sessions/${encodeURIComponent(key)}/history?limit=1000${before ? `&before=${encodeURIComponent(before)}` : ''}`,
    );
    pages.unshift(page.entries);
    before = page.before;
  } while (before);
  return pages.flat();
}

test('first run writes a 0600 config with fresh tokens, prints a working curl, and serves', async () => {
  const dir = await tempStateDir();
  const gw = await spawnGateway(dir);
  try {
    const mode = (await stat(gw.configPath)).mode & 0o777;
    assert.equal(mode, 0o600);
    // Session histories hold payload-derived text: private to the gateway's user.
    assert.equal((await stat(path.join(dir, 'data', 'sessions'))).mode & 0o777, 0o700);
    const out = gw.output();
    assert.match(out, new RegExp(`Wrote a new config .*${gw.configPath.replace(/[.]/g, '\\.')}`));
    assert.match(out, /curl -s http:\/\/127\.0\.0\.1:\d+\/hooks\/wake -H "Authorization: Bearer \$HOOK_TOKEN"/);
    const { stdout: token } = await run(process.execPath, [
      ...CLI,
      'config',
      'get',
      'hooks.token',
      '--config',
      gw.configPath,
    ]);
    const { stdout: gatewayToken } = await run(process.execPath, [
      ...CLI,
      'config',
      'get',
      'gateway.auth.token',
      '--config',
      gw.configPath,
    ]);
    assert.ok(token.trim().length >= 32);
    assert.notEqual(token.trim(), gatewayToken.trim());
    assert.ok(!out.includes(token.trim()), 'the token must not be printed');

    const r = await gw.hook('/hooks/wake', { text: 'Hello from curl' }, token.trim());
    assert.deepEqual(r, { status: 200, body: { ok: true, mode: 'now' } });
    const res = await fetch(`${gw.url}/api/sessions/${MAIN}/history`, {
      headers: { authorization: `Bearer ${gatewayToken.trim()}` },
    });
    const { entries } = (await res.json()) as { entries: any[] };
    assert.equal(entries[0].kind, 'system-event');
    assert.equal(entries[0].text, 'Hello from curl');
    const files = await readdir(path.join(dir, 'data', 'sessions'));
    for (const f of files) assert.equal((await stat(path.join(dir, 'data', 'sessions', f))).mode & 0o777, 0o600, f);
  } finally {
    assert.equal(await gw.stop(), 0);
  }
});

test('wake: now drains into one heartbeat turn; next-heartbeat waits for the periodic heartbeat', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { heartbeat: { everySeconds: 1 } });
  const gw = await spawnGateway(dir);
  try {
    assert.equal((await gw.hook('/hooks/wake', { text: 'queued for later', mode: 'next-heartbeat' })).status, 200);
    const first = await history(gw);
    assert.deepEqual(
      first.map((e) => e.kind),
      ['system-event'],
    );
    const drained = await eventually(async () => {
      const h = await history(gw);
      return h.some((e) => e.kind === 'reply') && h;
    });
    assert.deepEqual(
      drained.map((e) => e.kind),
      ['system-event', 'heartbeat', 'prompt', 'reply'],
    );
    assert.match(drained[1].text, /periodic/);
    assert.match(drained[2].text, /- queued for later/);
  } finally {
    await gw.stop();
  }
});

test('a burst of wake requests coalesces into at most two heartbeats that carry every event', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const gw = await spawnGateway(dir);
  try {
    const texts = Array.from({ length: 10 }, (_, i) => `event ${i}`);
    const results = await Promise.all(texts.map((text) => gw.hook('/hooks/wake', { text })));
    assert.ok(results.every((r) => r.status === 200));
    const h = await eventually(async () => {
      const entries = await history(gw);
      const prompts = entries
        .filter((e) => e.kind === 'prompt')
        .map((e) => e.text)
        .join('\n');
      return texts.every((t) => prompts.includes(`- ${t}`)) && entries;
    });
    const beats = h.filter((e) => e.kind === 'heartbeat').length;
    assert.ok(beats <= 2, `expected the burst to coalesce, got ${beats} heartbeats`);
  } finally {
    await gw.stop();
  }
});

test('a backlog of 100 next-heartbeat events drains early instead of waiting for the periodic heartbeat', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const gw = await spawnGateway(dir);
  try {
    for (let i = 0; i < 100; i++) {
      assert.equal((await gw.hook('/hooks/wake', { text: `backlog ${i}`, mode: 'next-heartbeat' })).status, 200);
    }
    const beat = await eventually(async () => (await history(gw)).find((e) => e.kind === 'heartbeat'));
    assert.match(beat.text, /backlog/);
    assert.match(beat.text, /100 pending/);
  } finally {
    await gw.stop();
  }
});

test('agent with the echo provider: 202, run ok, run session history, summary, delivery to the outbox', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const gw = await spawnGateway(dir);
  try {
    const r = await gw.hook('/hooks/agent', { message: 'Deploy of api finished', name: 'CI', sessionKey: undefined });
    assert.equal(r.status, 202);
    const runId = r.body.runId;
    const done = await eventually(async () => {
      const rec = await gw.admin(`/api/runs/${runId}`);
      return rec.status === 'ok' && rec;
    });
    assert.equal(done.agentId, 'main');
    assert.match(done.sessionKey, /^agent:main:hook:[0-9a-f-]{36}$/);
    assert.match(done.reply, /Deploy of api finished/);
    const runHistory = await history(gw, done.sessionKey);
    assert.deepEqual(
      runHistory.map((e) => e.kind),
      ['prompt', 'reply'],
    );
    assert.match(runHistory[0].text, /EXTERNAL_UNTRUSTED_CONTENT/);
    const main = await history(gw);
    assert.ok(main.some((e) => e.kind === 'system-event' && e.text.startsWith('Hook CI: ') && e.runId === runId));
    const { deliveries } = await gw.admin('/api/outbox');
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0].channel, 'telegram');
    assert.equal(deliveries[0].to, '12345');
    assert.equal(deliveries[0].runId, runId);
    assert.equal(deliveries[0].status, 'recorded', 'a channel without credentials only records');

    const quiet = await gw.hook('/hooks/agent', { message: 'no delivery please', deliver: false });
    await eventually(async () => (await gw.admin(`/api/runs/${quiet.body.runId}`)).status === 'ok');
    assert.equal((await gw.admin('/api/outbox')).deliveries.length, 1);
    const sessions = (await gw.admin('/api/sessions')).sessions.map((s: any) => s.key);
    assert.ok(sessions.includes('agent:main:main'));
  } finally {
    await gw.stop();
  }
});

test('agent with an OpenAI-compatible provider on loopback, and a provider error as a run error', async () => {
  const provider = await startFakeProvider((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.body.model === 'broken') {
      res.statusCode = 500;
      res.end(JSON.stringify({ error: { message: 'model melted' } }));
    } else res.end(JSON.stringify({ choices: [{ message: { content: `answer from ${req.body.model}` } }] }));
  });
  const dir = await tempStateDir();
  await writeConfig(dir, {
    // One try: a 500 would otherwise be tried again (test/http/run-retries.test.ts).
    hooks: { retry: { attempts: 1 } },
    models: { providers: { fake: { baseUrl: provider.baseUrl, apiKey: 'sk-test-key' } } },
    agents: { defaults: { models: ['fake/m1', 'fake/broken'] }, list: [{ id: 'main', default: true }] },
  });
  const gw = await spawnGateway(dir);
  try {
    const ok = await gw.hook('/hooks/agent', { message: 'hi', model: 'fake/m1', thinking: 'low', name: 'Prov' });
    assert.equal(ok.status, 202);
    const rec = await eventually(async () => {
      const r = await gw.admin(`/api/runs/${ok.body.runId}`);
      return r.status !== 'queued' && r.status !== 'running' && r;
    });
    assert.equal(rec.status, 'ok');
    assert.equal(rec.reply, 'answer from m1');
    assert.equal(provider.requests[0]!.path, '/v1/chat/completions');
    assert.equal(provider.requests[0]!.authorization, 'Bearer sk-test-key');
    assert.equal(provider.requests[0]!.body.reasoning_effort, 'low');

    const denied = await gw.hook('/hooks/agent', { message: 'hi', model: 'other/x' });
    assert.equal(denied.status, 400);
    assert.equal(denied.body.code, 'model_not_allowed');

    const bad = await gw.hook('/hooks/agent', { message: 'hi', model: 'fake/broken', name: 'Prov' });
    const failed = await eventually(async () => {
      const r = await gw.admin(`/api/runs/${bad.body.runId}`);
      return r.status === 'error' && r;
    });
    assert.match(failed.error, /500/);
    assert.match(failed.error, /model melted/);
    assert.ok(!JSON.stringify(failed).includes('sk-test-key'));
    const main = await history(gw);
    assert.ok(main.some((e) => e.text.startsWith('Hook Prov (error): ') && e.text.includes('model melted')));
  } finally {
    await gw.stop();
    await provider.close();
  }
});

test('admin API takes only the gateway token; /hooks takes only the hook token', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const gw = await spawnGateway(dir);
  try {
    const get = (p: string, token?: string, method = 'GET') =>
      fetch(gw.url + p, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
    assert.equal((await get('/api/sessions')).status, 401);
    assert.equal((await get('/api/sessions', HOOK_TOKEN)).status, 401);
    assert.equal((await get('/api/outbox', GATEWAY_TOKEN)).status, 200);
    assert.equal((await get('/api/nothing', GATEWAY_TOKEN)).status, 404);
    assert.equal((await get('/api/runs/unknown-run', GATEWAY_TOKEN)).status, 404);
    assert.equal((await get('/api/sessions', GATEWAY_TOKEN, 'POST')).status, 405);
    const body = (await (await get('/api/sessions', HOOK_TOKEN)).json()) as any;
    assert.equal(body.code, 'unauthorized');
    const hook = await gw.hook('/hooks/wake', { text: 'x' }, GATEWAY_TOKEN);
    assert.equal(hook.status, 401);
    const other = await fetch(`${gw.url}/elsewhere`);
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as any).code, 'not_found');
  } finally {
    await gw.stop();
  }
});

test('history, runs and outbox survive a restart', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const first = await spawnGateway(dir);
  await first.hook('/hooks/wake', { text: 'before restart', mode: 'next-heartbeat' });
  // next-heartbeat: a heartbeat the run asked for could drain 'before restart' while the first stops.
  const agent = await first.hook('/hooks/agent', { message: 'remember me', wakeMode: 'next-heartbeat' });
  await eventually(async () => (await first.admin(`/api/runs/${agent.body.runId}`)).status === 'ok');
  const before = await history(first);
  const outboxBefore = (await first.admin('/api/outbox')).deliveries;
  assert.equal(await first.stop(), 0);

  const second = await spawnGateway(dir);
  try {
    assert.deepEqual(await history(second), before);
    assert.deepEqual((await second.admin('/api/outbox')).deliveries, outboxBefore);
    const run = await second.admin(`/api/runs/${agent.body.runId}`);
    assert.equal(run.status, 'ok');
    // The reply is stored once, in the run's session, and found there again.
    assert.match(run.reply, /remember me/);
    // The next-heartbeat event is still pending after the restart and is drained by the next heartbeat.
    await second.hook('/hooks/wake', { text: 'after restart' });
    const prompt = await eventually(async () => (await history(second)).find((e) => e.kind === 'prompt'));
    assert.match(prompt.text, /- before restart/);
    assert.match(prompt.text, /- after restart/);
  } finally {
    await second.stop();
  }
});

test('kill -9 mid-write, then a clean restart that skips a torn line', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const first = await spawnGateway(dir);
  const acked: string[] = [];
  for (let i = 0; i < 5; i++) {
    assert.equal((await first.hook('/hooks/wake', { text: `settled ${i}`, mode: 'next-heartbeat' })).status, 200);
    acked.push(`settled ${i}`);
  }
  const sends = Array.from({ length: 200 }, (_, i) =>
    first.hook('/hooks/wake', { text: `burst ${i}`, mode: 'next-heartbeat' }).then(
      (r) => r.status === 200 && acked.push(`burst ${i}`),
      () => undefined,
    ),
  );
  await eventually(async () => acked.length > 20, 5000);
  await first.stop('SIGKILL');
  await Promise.all(sends);
  const sessionsDir = path.join(dir, 'data', 'sessions');
  const files = await readdir(sessionsDir);
  const mainFile = files.find((f) => f.includes('main%3amain'));
  assert.ok(mainFile, `main session file missing: ${files.join(', ')}`);
  // Simulate a crash in the middle of a line.
  await appendFile(path.join(sessionsDir, mainFile), '{"kind":"system-event","text":"tor');

  const second = await spawnGateway(dir);
  try {
    await second.hook('/hooks/wake', { text: 'after the crash', mode: 'next-heartbeat' });
    const texts = (await history(second)).map((e) => e.text);
    for (const t of acked) assert.ok(texts.includes(t), `acknowledged event "${t}" was lost`);
    assert.equal(texts.at(-1), 'after the crash');
    assert.ok(!texts.some((t) => t.startsWith('tor')));
    assert.match(second.output(), /torn|truncat/i);
    const raw = await readFile(path.join(sessionsDir, mainFile), 'utf8');
    for (const line of raw.trim().split('\n')) JSON.parse(line);
  } finally {
    await second.stop();
  }
});

test('SIGTERM during runs: a run that finishes within the grace is kept, a hanging one is recorded as interrupted', async () => {
  // The slow run answers only once the gateway is shutting down, inside its grace.
  const slowAnswers: (() => void)[] = [];
  const provider = await startFakeProvider((req, res) => {
    if (req.body.model === 'hang') return; // never answers
    slowAnswers.push(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ choices: [{ message: { content: 'slow answer' } }] }));
    });
  });
  const dir = await tempStateDir();
  await writeConfig(dir, {
    gateway: { shutdownGraceSeconds: 1 },
    models: { providers: { fake: { baseUrl: provider.baseUrl } } },
  });
  const first = await spawnGateway(dir);
  const slow = await first.hook('/hooks/agent', { message: 'slow', model: 'fake/slow', name: 'Slow' });
  const hang = await first.hook('/hooks/agent', { message: 'hang', model: 'fake/hang', name: 'Hang' });
  await eventually(async () => provider.requests.length === 2);
  const stopped = first.stop('SIGTERM');
  await eventually(async () => first.output().includes('shutting down'));
  for (const answer of slowAnswers) answer();
  assert.equal(await stopped, 0);

  const second = await spawnGateway(dir);
  try {
    assert.equal((await second.admin(`/api/runs/${slow.body.runId}`)).status, 'ok');
    const hung = await second.admin(`/api/runs/${hang.body.runId}`);
    assert.equal(hung.status, 'error');
    assert.match(hung.error, /interrupted/);
    const main = (await history(second)).map((e) => e.text);
    assert.ok(main.some((t) => t.startsWith('Hook Slow: ')));
    assert.ok(main.some((t) => t.startsWith('Hook Hang (error): interrupted')));
  } finally {
    await second.stop();
    await provider.close();
  }
});

test('a run cut off by kill -9 is reported as interrupted after the restart', async () => {
  const provider = await startFakeProvider(() => undefined);
  const dir = await tempStateDir();
  await writeConfig(dir, { models: { providers: { fake: { baseUrl: provider.baseUrl } } } });
  const first = await spawnGateway(dir);
  const r = await first.hook('/hooks/agent', { message: 'x', model: 'fake/hang', name: 'Lost' });
  await eventually(async () => provider.requests.length === 1);
  await first.stop('SIGKILL');
  const second = await spawnGateway(dir);
  try {
    const rec = await second.admin(`/api/runs/${r.body.runId}`);
    assert.equal(rec.status, 'error');
    assert.match(rec.error, /interrupted/);
    assert.ok((await history(second)).some((e) => e.text.startsWith('Hook Lost (error): interrupted')));
  } finally {
    await second.stop();
    await provider.close();
  }
});

test("an agent run whose acceptance cannot be written to its session's file gets 500 and never runs", async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { defaultSessionKey: 'hook:unwritable' } });
  const gw = await spawnGateway(dir);
  try {
    // The file is opened on its first write: a directory in its place makes that write fail.
    await mkdir(path.join(dir, 'data', 'sessions', 'agent%3amain%3ahook%3aunwritable.jsonl'));
    const r = await gw.hook('/hooks/agent', { message: 'must not run unrecorded', name: 'Unrecorded' });
    assert.equal(r.status, 500);
    assert.equal(r.body.code, 'internal_error');
    assert.match(r.body.error, /could not be recorded/);
    // Wakes, kept in other session files, are not affected.
    assert.equal((await gw.hook('/hooks/wake', { text: 'still up' })).status, 200);
    // Never run: a run, even a failed one, posts its summary to the main session. The wake's heartbeat
    // turn, asked for after the refusal, goes through the same runner: once its reply is in, a run
    // started at the refusal would have posted too.
    await eventually(async () => (await history(gw)).some((e) => e.kind === 'reply'));
    assert.ok(!(await history(gw)).some((e) => e.text.startsWith('Hook Unrecorded')));
  } finally {
    await gw.stop();
  }
});

test('config errors stop start-up with a message naming the key', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { token: GATEWAY_TOKEN, path: '/', allowedAgentIds: ['a', 3] } });
  const res = await run(process.execPath, [...CLI, 'gateway', '--state-dir', dir, '--port', '0']).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  assert.equal(res.code, 1);
  assert.match(res.stderr, /hooks\.allowedAgentIds\[1\] must be a string/);
  await writeConfig(dir, { hooks: { token: GATEWAY_TOKEN, path: '/' } });
  const res2 = await run(process.execPath, [
    ...CLI,
    'config',
    'check',
    '--config',
    path.join(dir, 'gateway.json5'),
  ]).catch((e) => e);
  assert.equal(res2.code, 1);
  assert.match(res2.stderr, /hooks\.path must not be "\/"/);
  assert.match(res2.stderr, /hooks\.token must differ from gateway\.auth\.token/);
  await writeFile(path.join(dir, 'gateway.json5'), '{ hooks: { enabled: true, }');
  const res3 = await run(process.execPath, [
    ...CLI,
    'config',
    'check',
    '--config',
    path.join(dir, 'gateway.json5'),
  ]).catch((e) => e);
  assert.match(res3.stderr, /gateway\.json5: .*\n.*JSON5 syntax error at line 1/);
  // config check compiles the mappings as a start does: a signed mapping's unset secret is named.
  await writeConfig(dir, {
    hooks: {
      mappings: [
        {
          id: 'gh',
          match: { path: 'gh' },
          action: 'wake',
          textTemplate: 'x',
          verify: { scheme: 'github', secret: '${HOOKGATE_UNSET_SECRET}' },
        },
      ],
    },
  });
  const res4 = await run(process.execPath, [
    ...CLI,
    'config',
    'check',
    '--config',
    path.join(dir, 'gateway.json5'),
  ]).catch((e) => e);
  assert.equal(res4.code, 1);
  assert.match(
    res4.stderr,
    /hooks\.mappings\[0\] \(id "gh"\)\.verify\.secret: environment variable HOOKGATE_UNSET_SECRET is not set/,
  );
});

test('CLI: --help and help for each command; unknown commands exit 2', async () => {
  const main = await run(process.execPath, [...CLI, '--help']);
  for (const cmd of ['gateway', 'config init', 'config check', 'config get']) assert.ok(main.stdout.includes(cmd));
  const gw = await run(process.execPath, [...CLI, 'gateway', '--help']);
  assert.match(gw.stdout, /--state-dir DIR/);
  assert.match(gw.stdout, /--port N/);
  const helpConfig = await run(process.execPath, [...CLI, 'help', 'config']);
  assert.match(helpConfig.stdout, /config <init\|check\|get KEY>/);
  const bad = await run(process.execPath, [...CLI, 'frobnicate']).catch((e) => e);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown command "frobnicate"/);
  const badFlag = await run(process.execPath, [...CLI, 'gateway', '--nope']).catch((e) => e);
  assert.equal(badFlag.code, 2);
});
