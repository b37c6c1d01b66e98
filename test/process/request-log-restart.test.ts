// The request log through the real gateway process: its entries are on disk and a restarted gateway
// answers GET /api/requests with them (paged, filtered); the live tail streams with the gateway token
// only, and a tail still open does not hold up the gateway's stop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  eventually,
  GATEWAY_TOKEN,
  ROOT,
  SOURCE_CLI,
  HOOK_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

const auth = { authorization: `Bearer ${GATEWAY_TOKEN}` };

function cli(args: string[], gw: SpawnedGateway): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...SOURCE_CLI, ...args, '--config', gw.configPath, '--url', gw.url],
      { cwd: ROOT },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

test('the request log survives a restart; the live tail streams and does not hold up a stop', async () => {
  const stateDir = await tempStateDir();
  await writeConfig(stateDir, { hooks: { requestLog: { maxEntries: 1000, retainDays: 1 } } });
  const gw = await spawnGateway(stateDir);
  let stopped = false;
  try {
    for (let i = 0; i < 5; i++) {
      const r = await gw.hook('/hooks/wake', { text: `wake ${i}`, mode: 'next-heartbeat' });
      assert.equal(r.status, 200);
    }
    assert.equal((await gw.hook('/hooks/wake', { text: 'x' }, 'wrong-hook-token-000000000')).status, 401);
    const before = await gw.admin('/api/requests');
    assert.equal(before.requests.length, 6);

    // The tail: the hook token is refused; with the gateway token, a new request comes as an event.
    const refused = await fetch(`${gw.url}/api/requests/live`, { headers: { authorization: `Bearer ${HOOK_TOKEN}` } });
    assert.equal(refused.status, 401);
    await refused.arrayBuffer();
    const res = await fetch(`${gw.url}/api/requests/live?outcome=2xx`, { headers: auth });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const read = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += value;
      }
    })().catch(() => {}); // the stream ends with the gateway
    await eventually(async () => text.includes(': hookgate live'), 20_000);
    assert.equal((await gw.hook('/hooks/wake', { text: 'watched', mode: 'next-heartbeat' })).status, 200);
    await eventually(async () => text.includes('event: request'), 20_000);
    const data = JSON.parse(/^data: (.*)$/m.exec(text)![1]!);
    assert.equal(data.hook, 'wake');
    assert.equal(data.status, 200);

    // Stopped with the tail still open: the gateway exits all the same.
    stopped = true;
    assert.equal(await gw.stop('SIGTERM'), 0);
    await read;
    assert.ok(
      (await readdir(path.join(stateDir, 'data', 'after', 'requests'))).some((f) => /^requests-\d+\.jsonl$/.test(f)),
    );

    const again = await spawnGateway(stateDir);
    try {
      const after = await again.admin('/api/requests');
      assert.equal(after.requests.length, 7);
      assert.deepEqual(
        after.requests.slice(0, 6).map((r: { requestId: string }) => r.requestId),
        before.requests.map((r: { requestId: string }) => r.requestId),
      );
      const refusedAfter = await again.admin('/api/requests?outcome=4xx');
      assert.deepEqual(
        refusedAfter.requests.map((r: { code: string }) => r.code),
        ['unauthorized'],
      );
      const page = await again.admin('/api/requests?limit=4');
      const older = await again.admin(`/api/requests?limit=4&before=${page.before}`);
      assert.equal(older.requests.length, 3);
      // The CLI reads the same log: the gateway's filters, and the cursor of older ones.
      const refusedCli = await cli(['requests', '--outcome', '4xx'], again);
      assert.equal(refusedCli.code, 0, refusedCli.out);
      const refusedRows = refusedCli.out.trimEnd().split('\n').slice(1);
      assert.equal(refusedRows.length, 1, refusedCli.out);
      assert.match(refusedRows[0]!, /\s401\s+unauthorized\s/);
      const newest = await cli(['requests', '--limit', '4'], again);
      assert.match(newest.out, new RegExp(`older: --before ${page.before}\n$`));
      const oldest = await cli(['requests', '--limit', '4', '--before', page.before], again);
      assert.equal(oldest.out.trimEnd().split('\n').length, 4, oldest.out);
      const badOutcome = await cli(['requests', '--outcome', '3xx'], again);
      assert.notEqual(badOutcome.code, 0);
      assert.match(badOutcome.out, /400 bad_request: outcome must be one of/);
      const runs = await cli(['runs', '--status', 'error'], again);
      assert.equal(runs.code, 0, runs.out);
      assert.match(runs.out, /No hook runs\./);
      const ask = await cli(['failures', 'ask', 'fail_0000000000000000'], again);
      assert.notEqual(ask.code, 0);
      assert.match(ask.out, /404 not_found/);
      // A request after the restart is numbered after those before it.
      assert.equal((await again.hook('/hooks/wake', { text: 'after', mode: 'next-heartbeat' })).status, 200);
      await eventually(async () => (await again.admin('/api/requests')).requests.length === 8);
    } finally {
      await again.stop();
    }
  } finally {
    if (!stopped) await gw.stop();
  }
});
