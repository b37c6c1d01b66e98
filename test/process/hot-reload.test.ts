// Hot reload through the real gateway process: edits, atomic saves, mv, delete and re-create, bad
// configs, every kind of key, transforms, and a client running through 20 rewrites.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  eventually,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  spawnGateway,
  tempStateDir,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

function config(hooks: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): string {
  return JSON.stringify(
    {
      gateway: { auth: { token: GATEWAY_TOKEN }, shutdownGraceSeconds: 1 },
      hooks: { enabled: true, token: HOOK_TOKEN, ...hooks },
      agents: { list: [{ id: 'main', default: true }] },
      channels: { telegram: { defaultTo: '1' } },
      ...extra,
    },
    null,
    2,
  );
}

async function start(hooks: Record<string, unknown> = {}, files: Record<string, string> = {}): Promise<SpawnedGateway> {
  const dir = await tempStateDir();
  await writeFile(path.join(dir, 'gateway.json5'), config(hooks));
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return spawnGateway(dir);
}

const logLines = (gw: SpawnedGateway, msg: string): any[] =>
  gw
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === msg);

async function wakeStatus(gw: SpawnedGateway, token = HOOK_TOKEN, p = '/hooks/wake'): Promise<number> {
  const res = await fetch(gw.url + p, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: '{"text":"ping"}',
  });
  await res.arrayBuffer();
  return res.status;
}

test('an edited token applies without a restart; the log names the key, never the value', async () => {
  const gw = await start();
  try {
    await writeFile(gw.configPath, config({ token: 'rotated-hook-token-9876543210' }));
    await eventually(async () => (await wakeStatus(gw, 'rotated-hook-token-9876543210')) === 200);
    assert.equal(await wakeStatus(gw, HOOK_TOKEN), 401);
    const line = await eventually(async () => logLines(gw, 'config reloaded')[0]);
    assert.equal(line.changed, 'hooks.token');
    assert.ok(!gw.output().includes('rotated-hook-token-9876543210'));
  } finally {
    await gw.stop();
  }
});

test("editors' atomic saves and mv replacements are followed; so is delete then re-create", async () => {
  const gw = await start();
  try {
    const tmp = `${gw.configPath}.tmp-save`;
    await writeFile(tmp, config({ path: '/ingress' }));
    await rename(tmp, gw.configPath);
    await eventually(async () => (await wakeStatus(gw, HOOK_TOKEN, '/ingress/wake')) === 200);
    assert.equal(await wakeStatus(gw), 404);

    await mkdir(path.join(gw.stateDir, 'elsewhere'), { recursive: true });
    const moved = path.join(gw.stateDir, 'elsewhere', 'new.json5');
    await writeFile(moved, config({ path: '/moved' }));
    await rename(moved, gw.configPath);
    await eventually(async () => (await wakeStatus(gw, HOOK_TOKEN, '/moved/wake')) === 200);

    await rm(gw.configPath);
    await eventually(async () => logLines(gw, 'config reload refused; the last good config stays in force').length > 0);
    assert.equal(await wakeStatus(gw, HOOK_TOKEN, '/moved/wake'), 200, 'the last good config keeps serving');
    await writeFile(gw.configPath, config({ path: '/back' }));
    await eventually(async () => (await wakeStatus(gw, HOOK_TOKEN, '/back/wake')) === 200);
  } finally {
    await gw.stop();
  }
});

test('a bad config keeps the last good one running, and the log says why (file, line or key)', async () => {
  const gw = await start();
  try {
    const cases: [string, RegExp][] = [
      ['{ hooks: { enabled: true, ', /gateway\.json5: .*JSON5 syntax error at line \d+/s],
      [config({ maxBodyBytes: 'big' }), /hooks\.maxBodyBytes must be an integer/],
      [config({ token: GATEWAY_TOKEN }), /hooks\.token must differ from gateway\.auth\.token/],
      [
        config({
          mappings: [{ id: 'x', match: { path: 'x' }, action: 'wake', transform: { module: '../../etc/passwd.js' } }],
        }),
        /hooks\.mappings\[0\] \(id "x"\)\.transform\.module/,
      ],
    ];
    for (const [i, [text, reason]] of cases.entries()) {
      await writeFile(gw.configPath, text);
      const refused = await eventually(
        async () => logLines(gw, 'config reload refused; the last good config stays in force')[i],
      );
      assert.match(refused.reason, reason);
      assert.equal(await wakeStatus(gw), 200);
    }
  } finally {
    await gw.stop();
  }
});

test('enabled, limits, mappings and presets apply live; the auth-failure lock survives reloads', async () => {
  const gw = await start({ authRateLimit: { maxFailures: 2, windowSeconds: 60, lockoutSeconds: 60 } });
  try {
    await writeFile(gw.configPath, config({ enabled: false }));
    await eventually(async () => (await wakeStatus(gw)) === 404);

    const limits = { maxBodyBytes: 100, authRateLimit: { maxFailures: 2, windowSeconds: 60, lockoutSeconds: 60 } };
    await writeFile(gw.configPath, config(limits));
    await eventually(async () => (await wakeStatus(gw)) === 200);
    const big = await gw.hook('/hooks/wake', { text: 'x'.repeat(200) });
    assert.equal(big.status, 413);

    const mapping = { id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'ci {{s}}' };
    await writeFile(
      gw.configPath,
      config({ ...limits, maxBodyBytes: 262144, mappings: [mapping], presets: ['gmail'] }),
    );
    await eventually(async () => (await gw.hook('/hooks/ci', { s: 'green' })).status === 200);
    const gmail = await gw.hook('/hooks/gmail', { messages: [{ id: 'q', sender: 'a@b', subject: 's', snippet: 'n' }] });
    assert.equal(gmail.status, 202);

    // Lock loopback, then reload: the lock stays.
    assert.equal(await wakeStatus(gw, 'wrong-1'), 401);
    assert.equal(await wakeStatus(gw, 'wrong-2'), 401);
    assert.equal(await wakeStatus(gw), 429);
    await writeFile(gw.configPath, config({ ...limits, maxBodyBytes: 5000 }));
    await eventually(async () =>
      logLines(gw, 'config reloaded').some(
        (l) => l.changed.includes('hooks.maxBodyBytes') && l.changed.includes('hooks.mappings'),
      ),
    );
    assert.equal(await wakeStatus(gw), 429);
  } finally {
    await gw.stop();
  }
});

test('a changed transform is used from its next call; a deleted one fails its mapping with a log line naming it', async () => {
  const T = 'hooks/transforms';
  const gw = await start(
    {
      mappings: [
        {
          id: 'tr',
          match: { path: 'tr' },
          action: 'wake',
          allowUnsafeExternalContent: true,
          transform: { module: 'say.ts' },
        },
      ],
    },
    { [`${T}/say.ts`]: 'export default () => ({ text: "version one" });' },
  );
  const lastEvent = async (): Promise<string> => {
    const { entries } = await gw.admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/history`);
    return entries.filter((e: any) => e.kind === 'system-event').at(-1).text;
  };
  try {
    assert.equal((await gw.hook('/hooks/tr', {})).status, 200);
    assert.equal(await lastEvent(), 'version one');
    await writeFile(path.join(gw.stateDir, T, 'say.ts'), 'export default () => ({ text: "version two" });');
    await eventually(
      async () => (await gw.hook('/hooks/tr', {})).status === 200 && (await lastEvent()) === 'version two',
    );

    await rm(path.join(gw.stateDir, T, 'say.ts'));
    const failed = await eventually(async () => {
      const r = await gw.hook('/hooks/tr', {});
      return r.status === 500 && r;
    });
    assert.equal(failed.body.code, 'mapping_failed');
    const line = await eventually(async () => logLines(gw, 'transform failed')[0]);
    assert.equal(line.module, 'say.ts');
    assert.equal(line.mapping, 'tr');
    assert.equal(await wakeStatus(gw), 200);
  } finally {
    await gw.stop();
  }
});

test('a client keeps being served correctly while the config is rewritten 20 times', async () => {
  const version = (v: 'A' | 'B') =>
    config({
      mappings: [
        {
          id: 'ci',
          match: { path: 'ci' },
          action: 'wake',
          wakeMode: 'next-heartbeat',
          allowUnsafeExternalContent: true,
          textTemplate: `${v} {{n}}`,
        },
      ],
    });
  const gw = await start();
  await writeFile(gw.configPath, version('A'));
  // The client runs until the rewrites are done (a fast machine sends thousands of requests by then).
  let stop = false;
  let client: Promise<void> | undefined;
  try {
    await eventually(async () => (await gw.hook('/hooks/ci', { n: 0 })).status === 200);
    const seen: string[] = [];
    client = (async () => {
      for (let n = 1; !stop; n++) {
        const r = await gw.hook(
          n % 2 ? '/hooks/ci' : '/hooks/wake',
          n % 2 ? { n } : { text: `plain ${n}`, mode: 'next-heartbeat' },
        );
        seen.push(`${r.status} ${JSON.stringify(r.body)}`);
      }
    })();
    // Each rewrite is reloaded, and the client served a few times under it, before the next one.
    const reloadsBefore = logLines(gw, 'config reloaded').length;
    const served = async (more: number): Promise<void> => {
      const mark = seen.length;
      await eventually(async () => seen.length >= mark + more);
    };
    for (let i = 0; i < 20; i++) {
      await writeFile(gw.configPath, version(i % 2 ? 'A' : 'B'));
      await eventually(async () => logLines(gw, 'config reloaded').length >= reloadsBefore + i + 1);
      await served(4);
    }
    stop = true;
    await client;
    assert.ok(seen.length > 20, `only ${seen.length} requests were made`);
    for (const s of seen) assert.match(s, /^200 \{"ok":true,"mode":"next-heartbeat"\}$/);
    // History is paged: older pages are asked for with the cursor of the one after them.
    const entries: any[] = [];
    for (let before = ''; ;) {
      const page = await gw.admin(
        `/api/sessions/${encodeURIComponent('agent:main:main')}/history?limit=1000${before && `&before=${encodeURIComponent(before)}`}`,
      );
      entries.unshift(...page.entries);
      if (!page.before) break;
      before = page.before;
    }
    const events = entries.filter((e: any) => e.kind === 'system-event');
    assert.ok(events.length >= seen.length);
    for (const e of events) assert.match(e.text, /^(A|B) \d+$|^plain \d+$/);
    // Both versions were in force while the client ran, and the rewrites were reloads.
    assert.ok(events.some((e: any) => e.text.startsWith('A ')) && events.some((e: any) => e.text.startsWith('B ')));
    assert.ok(logLines(gw, 'config reloaded').length >= 10);
  } finally {
    stop = true;
    await client?.catch(() => {});
    await gw.stop();
  }
});

test('a reload is all or nothing: an invalid gateway section keeps the hooks block from applying too', async () => {
  const gw = await start();
  try {
    // hooks.token set to the gateway token in force, with a gateway section that cannot be applied.
    const half = JSON.parse(config({ token: GATEWAY_TOKEN }));
    half.gateway.port = 'not a port';
    await writeFile(gw.configPath, JSON.stringify(half));
    const refused = await eventually(
      async () => logLines(gw, 'config reload refused; the last good config stays in force')[0],
    );
    assert.match(refused.reason, /gateway\.port/);
    assert.equal(logLines(gw, 'config reloaded').length, 0);
    // The hook token in force is still the old one; the gateway token opens nothing under /hooks.
    assert.equal(await wakeStatus(gw, HOOK_TOKEN), 200);
    assert.equal(await wakeStatus(gw, GATEWAY_TOKEN), 401);
  } finally {
    await gw.stop();
  }
});

test('token rotation under a few hundred requests a second: a lock never outlives the reload, and the old token never locks', async () => {
  const gw = await start();
  const ONE = 'rotated-token-one-0123456789';
  const TWO = 'rotated-token-two-0123456789';
  const phases: { token: string; statuses: number[] }[] = [{ token: HOOK_TOKEN, statuses: [] }];
  const phase = () => phases.at(-1)!;
  const switchTo = (token: string) => phases.push({ token, statuses: [] });
  let running = true;
  const sender = async (): Promise<void> => {
    while (running) {
      const { token, statuses } = phase();
      statuses.push(await wakeStatus(gw, token));
    }
  };
  const senders = Array.from({ length: 4 }, sender);
  const reloads = (n: number) => eventually(async () => logLines(gw, 'config reloaded').length >= n);
  const seen = (status: number, n: number) =>
    eventually(async () => phase().statuses.filter((s) => s === status).length >= n, 10_000);
  try {
    await seen(200, 20);
    // The sender takes the new token the moment before the file is written: refused (and locked, at
    // this rate) until the reload applies it, which forgives those failures and lifts the lock.
    switchTo(ONE);
    await writeFile(gw.configPath, config({ token: ONE }));
    await reloads(1);
    await seen(200, 100);
    // The sender keeps the old token a while after the reload applied the new one: in its grace period
    // it is refused without counting, so three times maxFailures refusals lock nothing.
    switchTo(ONE);
    await writeFile(gw.configPath, config({ token: TWO }));
    await reloads(2);
    await seen(401, 60);
    switchTo(TWO);
    await seen(200, 100);
  } finally {
    running = false;
    await Promise.all(senders);
    await gw.stop();
  }
  const [, early, late, after] = phases.map((p) => p.statuses);
  // Early switch: refusals until the first 200, then never refused again.
  const firstOk = early!.indexOf(200);
  assert.ok(firstOk > 0, 'the early switch was refused until the reload');
  assert.ok(early!.slice(0, firstOk).every((s) => s === 401 || s === 429));
  assert.deepEqual([...new Set(early!.slice(firstOk))], [200], 'no refusal once the reload applied the token');
  // Late switch: 401s, never a 429, and the new token is served at once.
  assert.ok(
    late!.every((s) => s === 200 || s === 401),
    JSON.stringify([...new Set(late)]),
  );
  assert.deepEqual([...new Set(after)], [200]);
});

test('a refused reload is logged by key, without the values it found', async () => {
  const gw = await start({ allowedSessionKeyPrefixes: ['hook:'], defaultSessionKey: 'hook:main' });
  try {
    const canary = 'canary-value-7d1e2f';
    await writeFile(gw.configPath, config({ allowedSessionKeyPrefixes: ['hook:'], defaultSessionKey: canary }));
    const refused = await eventually(
      async () => logLines(gw, 'config reload refused; the last good config stays in force')[0],
    );
    assert.match(refused.reason, /hooks\.defaultSessionKey/);
    assert.ok(!gw.output().includes(canary), 'the value is not logged');
  } finally {
    await gw.stop();
  }
});
