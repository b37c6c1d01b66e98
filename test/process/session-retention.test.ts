// hooks.sessionRetention on the real standalone gateway, observed through GET /api/sessions: a run's
// own one-off hook:<uuid> session is deleted once the retention passed after its run ended; named,
// default and main sessions stay; a deletion still to come survives kill -9 and a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { eventually, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

async function sessionKeys(gw: SpawnedGateway): Promise<string[]> {
  return (await gw.admin('/api/sessions')).sessions.map((s: any) => s.key);
}

/** Posts, waits for the run's final outcome, returns its session key. */
async function ranIn(gw: SpawnedGateway, p: string, body: unknown): Promise<string> {
  const r = await gw.hook(p, body);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const done = await eventually(async () => {
    const rec = await gw.admin(`/api/runs/${r.body.runId}`);
    return rec.status === 'ok' && rec;
  }, 60_000);
  return done.sessionKey as string;
}

test('a one-off hook session goes once the retention passed; named and main sessions stay', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks: {
      sessionRetention: { seconds: 1 },
      allowRequestSessionKey: true,
      mappings: [
        { id: 'named', match: { path: 'named' }, action: 'agent', messageTemplate: 'x', sessionKey: 'hook:ci' },
      ],
    },
  });
  const gw = await spawnGateway(dir);
  try {
    // The named ones end first: had they been scheduled, they would go before the one-off.
    const fromMapping = await ranIn(gw, '/hooks/named', {});
    const fromRequest = await ranIn(gw, '/hooks/agent', { message: 'x', sessionKey: 'hook:mine' });
    const oneOff = await ranIn(gw, '/hooks/agent', { message: 'x' });
    assert.match(oneOff, /^agent:main:hook:[0-9a-f-]{36}$/);
    assert.ok((await sessionKeys(gw)).includes(oneOff), 'the session is there while its retention runs');
    await eventually(async () => !(await sessionKeys(gw)).includes(oneOff), 60_000);
    const left = await sessionKeys(gw);
    for (const key of [fromMapping, fromRequest, 'agent:main:main']) assert.ok(left.includes(key), `${key} stays`);
    const files = await readdir(path.join(dir, 'data', 'sessions'));
    assert.ok(!files.some((f) => f.includes(oneOff.split(':').pop()!)), 'its file is gone too');
  } finally {
    await gw.stop();
  }
});

test('a retention of 0 keeps every session, scheduling nothing', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { sessionRetention: { seconds: 0 } } });
  const gw = await spawnGateway(dir);
  try {
    const kept = await ranIn(gw, '/hooks/agent', { message: 'x' });
    // A second run ending, and its retention file, show nothing was scheduled for the first.
    await ranIn(gw, '/hooks/agent', { message: 'y' });
    assert.ok((await sessionKeys(gw)).includes(kept));
    const schedule = await readFile(path.join(dir, 'data', 'after', 'session-retention.jsonl'), 'utf8').catch(() => '');
    assert.equal(schedule, '', 'nothing scheduled');
  } finally {
    await gw.stop();
  }
});

test('a deletion still to come survives kill -9: the next start deletes it by the retention then in force', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { sessionRetention: { seconds: 3600 } } });
  const first = await spawnGateway(dir);
  const schedule = path.join(dir, 'data', 'after', 'session-retention.jsonl');
  let oneOff: string;
  try {
    oneOff = await ranIn(first, '/hooks/agent', { message: 'x' });
    await eventually(async () => (await readFile(schedule, 'utf8').catch(() => '')).includes(oneOff), 60_000);
  } finally {
    await first.stop('SIGKILL');
  }
  await writeConfig(dir, { hooks: { sessionRetention: { seconds: 1 } } });
  const second = await spawnGateway(dir);
  try {
    await eventually(async () => !(await sessionKeys(second)).includes(oneOff), 60_000);
    assert.ok((await sessionKeys(second)).includes('agent:main:main'));
  } finally {
    await second.stop();
  }
});
