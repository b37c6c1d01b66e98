// Idempotency keys survive the gateway: a restart between a request and its retry, and a kill -9
// right after the answer. The key travels in the same line as the event or run acceptance it
// guards, so after a crash both are on disk or neither is; the body's hash travels with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HOOK_TOKEN, MAIN, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';

async function withKey(
  url: string,
  path: string,
  body: unknown,
  key: string,
): Promise<{ status: number; body: any; duplicate: string | null }> {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json(), duplicate: res.headers.get('x-hookgate-duplicate') };
}

test('a restart between a request and its retry: the retry is still a duplicate, with the first answer', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  let gw = await spawnGateway(dir);
  const wake = await withKey(gw.url, '/hooks/wake', { text: 'once only', mode: 'next-heartbeat' }, 'restart-wake');
  const agent = await withKey(gw.url, '/hooks/agent', { message: 'once only', deliver: false }, 'restart-agent');
  assert.equal(wake.status, 200);
  assert.equal(agent.status, 202);
  assert.equal(await gw.stop(), 0);

  gw = await spawnGateway(dir);
  try {
    const wakeAgain = await withKey(
      gw.url,
      '/hooks/wake',
      { text: 'once only', mode: 'next-heartbeat' },
      'restart-wake',
    );
    assert.deepEqual(wakeAgain.body, { ...wake.body, duplicate: true });
    assert.equal(wakeAgain.duplicate, '1');
    const agentAgain = await withKey(gw.url, '/hooks/agent', { message: 'once only', deliver: false }, 'restart-agent');
    assert.equal(agentAgain.status, 202);
    assert.deepEqual(agentAgain.body, { ...agent.body, duplicate: true });
    // Another body under a kept key is still refused after the restart, and changes nothing.
    const reused = await withKey(gw.url, '/hooks/wake', { text: 'twice?', mode: 'next-heartbeat' }, 'restart-wake');
    assert.equal(reused.status, 422);
    assert.equal(reused.body.code, 'idempotency_key_reused');
    const reusedRun = await withKey(gw.url, '/hooks/agent', { message: 'twice?', deliver: false }, 'restart-agent');
    assert.equal(reusedRun.body.code, 'idempotency_key_reused');
    const { entries } = await gw.admin(`/api/sessions/${MAIN}/history`);
    assert.equal(entries.filter((e: any) => e.kind === 'system-event' && e.text === 'once only').length, 1);
    assert.equal(entries.filter((e: any) => e.text === 'twice?').length, 0);
  } finally {
    await gw.stop();
  }
});

test('kill -9 right after each 200: every acknowledged key and its event come back together', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  for (let round = 0; round < 3; round++) {
    const gw = await spawnGateway(dir);
    const r = await withKey(
      gw.url,
      '/hooks/wake',
      { text: `crash round ${round}`, mode: 'next-heartbeat' },
      `crash-${round}`,
    );
    assert.equal(r.status, 200);
    await gw.stop('SIGKILL');
  }
  const gw = await spawnGateway(dir);
  try {
    for (let round = 0; round < 3; round++) {
      const again = await withKey(
        gw.url,
        '/hooks/wake',
        { text: `crash round ${round}`, mode: 'next-heartbeat' },
        `crash-${round}`,
      );
      assert.equal(again.body.duplicate, true, `round ${round}`);
    }
    const { entries } = await gw.admin(`/api/sessions/${MAIN}/history`);
    for (let round = 0; round < 3; round++) {
      assert.equal(entries.filter((e: any) => e.text === `crash round ${round}`).length, 1, `round ${round}`);
    }
  } finally {
    await gw.stop();
  }
});
