// Pause and resume on the real gateway over HTTP: a paused hook's requests are still checked, then
// held (202 held) and carried out on resume in the order they arrived, under load; hooks.maxHeld;
// the pause and the held actions through a kill -9; the admin API's answers, /metrics and the request log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  eventually,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  MAIN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  SOURCE_CLI,
  spawnCapturing,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { assertError } from '../helpers/common.ts';

async function adminPost(gw: SpawnedGateway, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(gw.url + p, { method: 'POST', headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

async function send(
  gw: SpawnedGateway,
  p: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(gw.url + p, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

async function hookState(gw: SpawnedGateway, name: string): Promise<{ paused: boolean; held: number }> {
  const { hooks } = await gw.admin('/api/hooks');
  return hooks.find((h: { name: string }) => h.name === name);
}

async function eventTexts(gw: SpawnedGateway): Promise<string[]> {
  const { entries } = await gw.admin(`/api/sessions/${MAIN}/history?limit=1000`);
  return entries.filter((e: any) => e.kind === 'system-event').map((e: any) => e.text);
}

const wake = (text: string) => ({ text, mode: 'next-heartbeat' });

test('a paused hook: checked as always, held (202 held), carried out on resume in arrival order under load', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks: {
      mappings: [
        {
          id: 'alerts',
          match: { path: 'alerts' },
          action: 'wake',
          textTemplate: 'alert',
          allowUnsafeExternalContent: true,
        },
      ],
    },
  });
  const gw = await spawnGateway(dir);
  try {
    const { hooks } = await gw.admin('/api/hooks');
    assert.deepEqual(hooks, [
      { name: 'wake', paused: false, held: 0 },
      { name: 'agent', paused: false, held: 0 },
      { name: 'alerts', paused: false, held: 0 },
    ]);
    const unknown = await adminPost(gw, '/api/hooks/nope/pause');
    assertError(unknown, 404, 'not_found', /no hook named "nope"/);
    const paused = await adminPost(gw, '/api/hooks/wake/pause');
    assert.equal(paused.status, 200);
    assert.deepEqual(paused.body, { ok: true, name: 'wake', paused: true, held: 0 });

    // Still authenticated, validated and deduplicated.
    assertError(await send(gw, '/hooks/wake', wake('x'), { authorization: 'Bearer wrong' }), 401, 'unauthorized');
    assertError(await send(gw, '/hooks/wake', { mode: 'now' }), 400, 'invalid_payload');
    const keyed = await send(gw, '/hooks/wake', wake('keyed'), { 'idempotency-key': 'k1' });
    assert.equal(keyed.status, 202);
    assert.deepEqual(keyed.body, { ok: true, held: true, requestId: keyed.headers.get('x-request-id') });
    const again = await send(gw, '/hooks/wake', wake('keyed'), { 'idempotency-key': 'k1' });
    assert.equal(again.status, 202);
    assert.deepEqual(again.body, { ...keyed.body, duplicate: true });

    // Under load: many at once; the order they were held in is the order the request log recorded.
    const n = 120;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => send(gw, '/hooks/wake', wake(`order ${i}`))));
    const textOf = new Map<string, string>([[keyed.body.requestId as string, 'keyed']]);
    answers.forEach((a, i) => {
      assert.equal(a.status, 202, JSON.stringify(a.body));
      assert.equal(a.body.held, true);
      textOf.set(a.body.requestId, `order ${i}`);
    });
    // Another hook is not paused.
    assert.equal((await send(gw, '/hooks/alerts', {})).status, 200);
    assert.deepEqual(await hookState(gw, 'wake'), { name: 'wake', paused: true, held: n + 1 });
    const metrics = await (
      await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } })
    ).text();
    assert.match(metrics, new RegExp(`^hookgate_held_actions ${n + 1}$`, 'm'));
    assert.deepEqual(await eventTexts(gw), ['alert']);

    const { requests } = await gw.admin('/api/requests?limit=1000');
    const heldInLog = requests.filter((r: any) => r.held === true);
    assert.equal(heldInLog.length, n + 1, 'every held request, and only those (not the duplicate), shows held');
    assert.ok(requests.some((r: any) => r.duplicate === true && r.status === 202 && r.held === undefined));
    // The gateway's log line of each held request says so too (the log is written after the answer).
    const heldLines = (): number =>
      gw
        .output()
        .split('\n')
        .filter((l) => l.includes('"msg":"hook request"') && l.includes('"held":true')).length;
    await eventually(async () => heldLines() === n + 1);
    const logged = heldInLog.map((r: any) => textOf.get(r.requestId));

    const resumed = await adminPost(gw, '/api/hooks/wake/resume');
    assert.equal(resumed.status, 200);
    assert.equal(resumed.body.paused, false);
    const texts = await eventually(async () => {
      const t = (await eventTexts(gw)).filter((x) => x !== 'alert');
      return t.length >= n + 1 && t;
    });
    assert.deepEqual(texts, logged, 'carried out in the order the request log recorded');
    assert.deepEqual(await hookState(gw, 'wake'), { name: 'wake', paused: false, held: 0 });
    // A duplicate after the resume still gets the held answer.
    const later = await send(gw, '/hooks/wake', wake('keyed'), { 'idempotency-key': 'k1' });
    assert.deepEqual(later.body, { ...keyed.body, duplicate: true });
    // Resumed: requests act at once again.
    assert.deepEqual((await send(gw, '/hooks/wake', wake('live'))).body, { ok: true, mode: 'next-heartbeat' });
  } finally {
    await gw.stop();
  }
});

test('hookgate pause|resume, and hooks.maxHeld: beyond it 503 paused_full with Retry-After, nothing held', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { maxHeld: 3 } });
  const gw = await spawnGateway(dir);
  try {
    const cli = async (...args: string[]): Promise<{ code: number | null; out: string }> => {
      const run = spawnCapturing(process.execPath, [...SOURCE_CLI, ...args, '--state-dir', dir, '--url', gw.url]);
      return { code: await run.exited, out: run.output() };
    };
    const unknown = await cli('pause', 'nope');
    assert.equal(unknown.code, 1);
    assert.match(unknown.out, /answered 404: no hook named "nope"/);
    assert.deepEqual(await cli('pause', 'agent'), { code: 0, out: 'Hook agent is paused (0 actions held).\n' });
    for (let i = 0; i < 3; i++) assert.equal((await send(gw, '/hooks/agent', { message: `m${i}` })).status, 202);
    const full = await send(gw, '/hooks/agent', { message: 'one too many' });
    assertError(full, 503, 'paused_full', /3 actions are already held/);
    assert.match(full.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal((await hookState(gw, 'agent')).held, 3);
    const resumed = await cli('resume', 'agent');
    assert.equal(resumed.code, 0);
    assert.match(resumed.out, /^Hook agent is resumed \(3 actions held, being carried out in arrival order\)\.\n$/);
  } finally {
    await gw.stop();
  }
});

test('kill -9 with actions held: the pause and the held actions come back (webhooks test says paused); resume carries each out once', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  let gw = await spawnGateway(dir);
  const ids: string[] = [];
  try {
    await adminPost(gw, '/api/hooks/wake/pause');
    for (let i = 0; i < 5; i++) {
      const r = await send(gw, '/hooks/wake', wake(`kept ${i}`), { 'idempotency-key': `key-${i}` });
      assert.equal(r.status, 202);
      ids.push(r.body.requestId);
    }
  } finally {
    await gw.stop('SIGKILL');
  }
  const dryRun = async (): Promise<string> => {
    const run = spawnCapturing(process.execPath, [
      ...SOURCE_CLI,
      'webhooks',
      'test',
      'wake',
      '--payload',
      payload,
      '--state-dir',
      dir,
    ]);
    assert.equal(await run.exited, 0, run.output());
    return run.output();
  };
  const payload = path.join(dir, 'wake.json');
  await writeFile(payload, JSON.stringify(wake('tried')));
  const whilePaused = await dryRun();
  assert.match(whilePaused, /^paused +yes: hook wake's action would be held until it is resumed$/m);
  assert.match(whilePaused, /^answer +202 \{"ok":true,"held":true,"requestId":"<its request id>"\}$/m);
  gw = await spawnGateway(dir);
  try {
    assert.deepEqual(await hookState(gw, 'wake'), { name: 'wake', paused: true, held: 5 });
    const dup = await send(gw, '/hooks/wake', wake('kept 2'), { 'idempotency-key': 'key-2' });
    assert.deepEqual(dup.body, { ok: true, held: true, requestId: ids[2], duplicate: true });
    assert.equal((await adminPost(gw, '/api/hooks/wake/resume')).status, 200);
    await eventually(async () => (await hookState(gw, 'wake')).held === 0);
    const texts = (await eventTexts(gw)).filter((t) => t.startsWith('kept'));
    assert.deepEqual(texts, ['kept 0', 'kept 1', 'kept 2', 'kept 3', 'kept 4']);
    const resumed = await dryRun();
    assert.doesNotMatch(resumed, /^paused/m);
    assert.match(resumed, /^answer +200 \{"ok":true,"mode":"next-heartbeat"\}$/m);
  } finally {
    await gw.stop('SIGKILL');
  }
  // Once more: nothing is held any longer, so nothing runs twice.
  gw = await spawnGateway(dir);
  try {
    assert.deepEqual(await hookState(gw, 'wake'), { name: 'wake', paused: false, held: 0 });
    assert.equal((await eventTexts(gw)).filter((t) => t.startsWith('kept')).length, 5);
  } finally {
    await gw.stop();
  }
});
