// The paged admin API over HTTP on the real gateway: history and outbox pages, cursors, bad limits and
// cursors as 400s, and a run read back from its session file after a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { eventually, GATEWAY_TOKEN, MAIN, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { waitUntil } from '../helpers/common.ts';

async function get(url: string, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url + p, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

test('history pages: newest 200 by default, ?limit and ?before walk back to the oldest, bad ones are 400', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const gw = await spawnGateway(dir);
  try {
    const total = 230;
    for (let n = 0; n < total; n += 10) {
      const sent = Array.from({ length: 10 }, (_, i) =>
        gw.hook('/hooks/wake', { text: `w${String(n + i).padStart(3, '0')}`, mode: 'next-heartbeat' }),
      );
      for (const r of await Promise.all(sent)) assert.equal(r.status, 200);
    }
    const texts = (entries: any[]) => entries.map((e) => e.text);
    // The backlog's heartbeats are written after the wakes' answers: read once the history is still,
    // that is every heartbeat turn has its reply and fewer events wait than make a backlog (100), so
    // no heartbeat is coming.
    const still = (entries: any[]): boolean => {
      const kinds: string[] = entries.map((e) => e.kind);
      const waiting = kinds.slice(kinds.lastIndexOf('heartbeat') + 1).filter((k) => k === 'system-event').length;
      return kinds.filter((k) => k === 'prompt').length === kinds.filter((k) => k === 'reply').length && waiting < 100;
    };
    // Read the newest page between two reads of the whole history that agree: nothing was written
    // meanwhile (a late heartbeat turn would shift the page).
    let all: any;
    let first: any;
    await waitUntil(async () => {
      all = (await get(gw.url, `/api/sessions/${MAIN}/history?limit=1000`)).body;
      if (!still(all.entries)) return false;
      first = (await get(gw.url, `/api/sessions/${MAIN}/history`)).body;
      const again = (await get(gw.url, `/api/sessions/${MAIN}/history?limit=1000`)).body;
      return JSON.stringify(again) === JSON.stringify(all);
    }, 'the backlog drained');
    assert.equal(all.before, undefined, 'everything fits: no cursor');
    // The wakes, and the heartbeats their backlog asked for.
    const expected: string[] = texts(all.entries);
    const wakes = texts(all.entries.filter((e: any) => e.kind === 'system-event'));
    assert.deepEqual(
      wakes.sort(),
      Array.from({ length: total }, (_, i) => `w${String(i).padStart(3, '0')}`),
    );

    assert.deepEqual(texts(first.entries), expected.slice(-200), 'the newest 200, oldest first');
    assert.equal(typeof first.before, 'string');

    const walked: string[] = [];
    let before: string | undefined;
    let pages = 0;
    do {
      const page = await get(
        gw.url,
        `/api/sessions/${MAIN}/history?limit=70${before ? `&before=${encodeURIComponent(before)}` : ''}`,
      );
      assert.equal(page.status, 200);
      assert.ok(page.body.entries.length <= 70);
      walked.unshift(...texts(page.body.entries));
      before = page.body.before;
      pages++;
    } while (before);
    assert.equal(pages, Math.ceil(expected.length / 70));
    assert.deepEqual(walked, expected);

    for (const limit of ['0', '1001', '-5', 'abc', '1.5', '', '1e3', '10&limit=20']) {
      const r = await get(gw.url, `/api/sessions/${MAIN}/history?limit=${limit}`);
      assert.equal(r.status, 400, `limit=${limit}`);
      assert.equal(r.body.code, 'bad_request');
      assert.match(r.body.error, /limit/);
    }
    const outboxLimit = await get(gw.url, '/api/outbox?limit=5000');
    assert.equal(outboxLimit.status, 400);

    // A run's session gives a cursor that is not the main session's.
    const run = await gw.hook('/hooks/agent', { message: 'hello', name: 'CI' });
    const done = await eventually(async () => {
      const r = await gw.admin(`/api/runs/${run.body.runId}`);
      return r.status === 'ok' && r;
    });
    const foreign = (await get(gw.url, `/api/sessions/${encodeURIComponent(done.sessionKey)}/history?limit=1`)).body
      .before;
    assert.equal(typeof foreign, 'string');
    const [tag, seq, offset] = (first.before as string).split('.');
    for (const cursor of [
      foreign,
      'garbage',
      `${tag}.${seq}.${Number(offset) + 3}`,
      `${tag}.99.0`,
      '../../etc/passwd',
    ]) {
      const r = await get(gw.url, `/api/sessions/${MAIN}/history?before=${encodeURIComponent(cursor)}`);
      assert.equal(r.status, 400, `cursor ${cursor}`);
      assert.match(r.body.error, /cursor/);
    }
    const nobody = await get(
      gw.url,
      `/api/sessions/${encodeURIComponent('agent:main:nobody')}/history?before=${encodeURIComponent(first.before)}`,
    );
    assert.equal(nobody.status, 400);
    assert.deepEqual((await get(gw.url, `/api/sessions/${encodeURIComponent('agent:main:nobody')}/history`)).body, {
      entries: [],
    });

    // The outbox pages the same way.
    const second = await gw.hook('/hooks/agent', { message: 'again', name: 'CI' });
    await eventually(async () => (await gw.admin(`/api/runs/${second.body.runId}`)).status === 'ok');
    const newest = (await get(gw.url, '/api/outbox?limit=1')).body;
    assert.deepEqual(
      newest.deliveries.map((d: any) => d.runId),
      [second.body.runId],
    );
    const older = (await get(gw.url, `/api/outbox?limit=1&before=${encodeURIComponent(newest.before)}`)).body;
    assert.deepEqual(
      older.deliveries.map((d: any) => d.runId),
      [run.body.runId],
    );
    assert.equal(older.before, undefined);
    const wrong = await get(gw.url, `/api/outbox?before=${encodeURIComponent(first.before)}`);
    assert.equal(wrong.status, 400, 'a history cursor is no outbox cursor');
  } finally {
    await gw.stop();
  }
});

test('a run no longer in the tail read on start is answered from its session file', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
    storage: { segmentBytes: 65536, sessionRetainBytes: 4194304 },
  });
  const first = await spawnGateway(dir);
  const runs: string[] = [];
  try {
    // Runs in one session, each with prompt and reply of about 60 KB: the first leaves the newest two segments.
    for (let n = 0; n < 5; n++) {
      const r = await first.hook('/hooks/agent', {
        message: `run ${n} ${'m'.repeat(60_000)}`,
        name: 'Big',
        sessionKey: 'hook:shared',
        deliver: false,
      });
      assert.equal(r.status, 202);
      runs.push(r.body.runId);
      await eventually(async () => (await first.admin(`/api/runs/${r.body.runId}`)).status === 'ok');
    }
  } finally {
    await first.stop();
  }
  const sessions = await readdir(path.join(dir, 'data', 'sessions'));
  assert.ok(
    sessions.filter((f) => f.startsWith('agent%3amain%3ahook%3ashared.jsonl.')).length >= 3,
    sessions.join(', '),
  );

  const second = await spawnGateway(dir);
  try {
    const run = await second.admin(`/api/runs/${runs[0]}`);
    assert.equal(run.status, 'ok');
    assert.equal(run.sessionKey, 'agent:main:hook:shared');
    assert.match(run.reply, /run 0 m+/);
    assert.equal((await get(second.url, '/api/runs/no-such-run')).status, 404);
  } finally {
    await second.stop();
  }
});

test('a reload that changes the storage block says it applies at the next start', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const gw = await spawnGateway(dir);
  try {
    await writeConfig(dir, { storage: { segmentBytes: 1048576 } });
    await eventually(async () => gw.output().includes('storage changes apply at the next start'), 10_000);
    assert.equal((await gw.hook('/hooks/wake', { text: 'still fine', mode: 'next-heartbeat' })).status, 200);
  } finally {
    await gw.stop();
  }
});
