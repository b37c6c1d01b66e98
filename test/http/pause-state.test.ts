// A pause outlives the process, and so does its loss: held actions whose hook's pause state is gone
// (an emptied or deleted pauses.jsonl) stay held and their hook stays paused, said in one warning
// naming the file; held actions left by a resume that a stop cut short are carried out at the start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { post, startTestGateway, type TestGateway, coreAdmin } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const wakeState = async (gw: TestGateway): Promise<unknown> =>
  (await coreAdmin(gw, 'GET', 'hooks')).hooks.find((h: { name: string }) => h.name === 'wake');

async function holdWakes(stateDir: string, texts: string[]): Promise<void> {
  const gw = await startTestGateway({ stateDir });
  try {
    await coreAdmin(gw, 'POST', 'hooks/wake/pause');
    for (const text of texts) {
      const r = await post(gw.url, '/hooks/wake', { text });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      assert.equal(r.body.held, true);
    }
  } finally {
    await gw.close();
  }
}

test('an emptied pauses.jsonl: the hook holding actions stays paused, nothing runs, one warning names the file', async () => {
  const stateDir = await tempDir('hookgate-pause-state-');
  await holdWakes(stateDir, ['held one', 'held two', 'held three']);
  const file = path.join(stateDir, 'pauses.jsonl');
  await writeFile(file, '');

  const gw = await startTestGateway({ stateDir });
  try {
    assert.deepEqual(await wakeState(gw), { name: 'wake', paused: true, held: 3 });
    const lost = gw.rec.logs.filter((l) => /pause state/.test(l.msg));
    assert.equal(lost.length, 1, JSON.stringify(gw.rec.logs));
    assert.equal(lost[0]!.level, 'warn');
    assert.equal(lost[0]!.fields?.file, file);
    assert.equal(lost[0]!.fields?.hooks, 'wake');
    // A new request to the hook is held too, behind the others.
    assert.equal((await post(gw.url, '/hooks/wake', { text: 'held four' })).body.held, true);
    assert.equal(gw.rec.events.length, 0, 'nothing held was carried out');

    // The owner decides: a resume carries them out in arrival order.
    await coreAdmin(gw, 'POST', 'hooks/wake/resume');
    await waitUntil(() => gw.rec.events.length === 4, 'the held wakes carried out');
    assert.deepEqual(
      gw.rec.events.map((e) => e.text.match(/held \w+/)?.[0]),
      ['held one', 'held two', 'held three', 'held four'],
    );
  } finally {
    await gw.close();
  }

  // The resume is on disk: the next start neither warns nor pauses again.
  const again = await startTestGateway({ stateDir });
  try {
    assert.deepEqual(await wakeState(again), { name: 'wake', paused: false, held: 0 });
    assert.equal(again.rec.logs.filter((l) => /pause state/.test(l.msg)).length, 0);
  } finally {
    await again.close();
  }
});

test('a resume cut short by a stop: what it left held is carried out at the next start, without a warning', async () => {
  const stateDir = await tempDir('hookgate-pause-state-');
  const first = await startTestGateway({ stateDir });
  try {
    await coreAdmin(first, 'POST', 'hooks/agent/pause');
    for (const message of ['run one', 'run two', 'run three']) {
      assert.equal((await post(first.url, '/hooks/agent', { message, deliver: false })).body.held, true);
    }
  } finally {
    await first.close();
  }
  // One run slot, and the first run never ends before the stop: the resume stops at the second.
  let release!: () => void;
  const blocked = new Promise<void>((resolve) => (release = resolve));
  const cut = await startTestGateway({
    stateDir,
    hooks: { maxConcurrentRuns: 1 },
    turn: async () => {
      await blocked;
      return { status: 'ok', reply: 'done' };
    },
  });
  try {
    await coreAdmin(cut, 'POST', 'hooks/agent/resume');
    await waitUntil(() => cut.rec.turns.length === 1, 'the first held run started');
  } finally {
    const closed = cut.close();
    release();
    await closed;
  }
  const next = await startTestGateway({ stateDir });
  try {
    await next.finalRuns(2);
    assert.deepEqual(
      next.rec.turns.map((t) => /run \w+/.exec(t.prompt)?.[0]),
      ['run two', 'run three'],
    );
    const agent = (await coreAdmin(next, 'GET', 'hooks')).hooks.find((h: { name: string }) => h.name === 'agent');
    assert.deepEqual(agent, { name: 'agent', paused: false, held: 0 });
    assert.equal(next.rec.logs.filter((l) => /pause state/.test(l.msg)).length, 0);
  } finally {
    await next.close();
  }
});
