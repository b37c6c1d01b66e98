// The OpenClaw host's journal of acknowledged events and runs: what a restart hands back, once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { appendFile, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { AckJournal } from '../../plugin/hosts/openclaw/ack-journal.ts';
import type { AcceptedRun } from '../../plugin/host.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const fileOf = (stateDir: string): string => path.join(stateDir, 'hookgate', 'acknowledged.jsonl');
const lines = async (stateDir: string): Promise<string[]> =>
  (await readFile(fileOf(stateDir), 'utf8')).split('\n').filter(Boolean);

const event = (id: string, extra: { runId?: string } = {}) => ({
  id,
  at: Date.now(),
  sessionKey: 'agent:main:main',
  text: `text of ${id}`,
  ...extra,
});

const run = (runId: string): AcceptedRun => ({
  runId,
  agentId: 'main',
  sessionKey: 'agent:main:hook:ingress',
  prompt: `prompt of ${runId}`,
  timeoutMs: 60_000,
  name: `hook-${runId}`,
  wakeMode: 'next-heartbeat',
  deliver: false,
  channel: 'last',
});

test('an event OpenClaw never took in comes back at the next start, one it took in does not', async () => {
  const dir = await tempDir('ack-journal-');
  const first = new AckJournal();
  assert.deepEqual(await first.open(dir), { events: [], runs: [], interrupted: [], keys: [] });
  await first.event(event('e1'));
  await first.event(event('e2'));
  await first.event(event('e3'));
  await first.taken('e2');

  const second = new AckJournal();
  const pending = await second.open(dir);
  assert.deepEqual(
    pending.events.map((e) => [e.id, e.text, e.sessionKey]),
    [
      ['e1', 'text of e1', 'agent:main:main'],
      ['e3', 'text of e3', 'agent:main:main'],
    ],
  );
  // Handed back and then taken in: the start after that has nothing left.
  await second.taken('e1');
  await second.taken('e3');
  assert.deepEqual((await new AckJournal().open(dir)).events, []);
});

test('a run OpenClaw never started is run again; one it started and nobody saw end is interrupted', async () => {
  const dir = await tempDir('ack-journal-');
  const first = new AckJournal();
  await first.open(dir);
  for (const id of ['r1', 'r2', 'r3', 'r4']) await first.run(run(id));
  await first.taken('r2');
  await first.taken('r3');
  await first.done('r3');
  // r4's summary was acknowledged: the run ended even though its final status never made it to disk.
  await first.taken('r4');
  await first.event(event('s4', { runId: 'r4' }));

  const pending = await new AckJournal().open(dir);
  assert.deepEqual(
    pending.runs.map((r) => [r.runId, r.prompt]),
    [['r1', 'prompt of r1']],
  );
  assert.deepEqual(
    pending.interrupted.map((r) => r.runId),
    ['r2'],
  );
  assert.deepEqual(
    pending.events.map((e) => e.id),
    ['s4'],
  );
});

test('each start keeps only what is pending, and what it hands back stays until taken', async () => {
  const dir = await tempDir('ack-journal-');
  const first = new AckJournal();
  await first.open(dir);
  await first.run(run('r1'));
  await first.run(run('r2'));
  await first.taken('r2');
  await first.event(event('e1'));
  await first.event(event('e2'));
  await first.taken('e2');
  assert.equal((await lines(dir)).length, 6);

  await new AckJournal().open(dir);
  // r1 (to run again), r2 with its "taken" (interrupted), e1.
  assert.equal((await lines(dir)).length, 4);
  // A start that dies before handing anything over hands the same back the next time.
  const again = await new AckJournal().open(dir);
  assert.deepEqual(
    [again.runs.map((r) => r.runId), again.interrupted.map((r) => r.runId), again.events.map((e) => e.id)],
    [['r1'], ['r2'], ['e1']],
  );
});

test('a line torn by a crash and lines of another shape are skipped, the rest is read', async () => {
  const dir = await tempDir('ack-journal-');
  const first = new AckJournal();
  await first.open(dir);
  await first.event(event('e1'));
  await appendFile(fileOf(dir), '{"k":"event","id":"x","sessionKey":"agent:main:main","text":1,"at":1}\n');
  await appendFile(fileOf(dir), '{"k":"run","id":"r9","run":{"runId":"other"}}\n');
  await appendFile(fileOf(dir), '{"k":"event","id":"e2","sessionKey":"agent:main:ma');
  const pending = await new AckJournal().open(dir);
  assert.deepEqual(
    pending.events.map((e) => e.id),
    ['e1'],
  );
  assert.deepEqual(pending.runs, []);
});

test('a long-running journal is compacted to what is pending', async () => {
  const dir = await tempDir('ack-journal-');
  const journal = new AckJournal();
  await journal.open(dir);
  await journal.event(event('kept'));
  // Many events, each taken in: written concurrently, as requests would.
  await Promise.all(
    Array.from({ length: 800 }, async (_, i) => {
      await journal.event(event(`e${i}`));
      await journal.taken(`e${i}`);
    }),
  );
  assert.ok((await lines(dir)).length < 600, `${(await lines(dir)).length} lines`);
  const pending = await new AckJournal().open(dir);
  assert.deepEqual(
    pending.events.map((e) => e.id),
    ['kept'],
  );
});

test('the journal is private to the gateway user', async () => {
  const dir = await tempDir('ack-journal-');
  const journal = new AckJournal();
  await journal.open(dir);
  await journal.event(event('e1'));
  assert.equal((await stat(fileOf(dir))).mode & 0o777, 0o600);
  assert.equal((await stat(path.dirname(fileOf(dir)))).mode & 0o777, 0o700);
});

test('lines that come while a write is under way go out together in the next write', async () => {
  const dir = await tempDir('ack-journal-');
  const journal = new AckJournal();
  await journal.open(dir);
  // 200 wakes acknowledged in one turn go out in one write: all are on disk when the second one's
  // promise resolves (one append each, one after another, had two there).
  const written = Array.from({ length: 200 }, (_, i) => journal.event(event(`e${i}`)));
  const onDiskWhenSecondResolved = await written[1]!.then(
    () => readFileSync(fileOf(dir), 'utf8').split('\n').filter(Boolean).length,
  );
  assert.equal(onDiskWhenSecondResolved, 200);
  await Promise.all(written);
  assert.deepEqual(
    (await new AckJournal().open(dir)).events.map((e) => e.id),
    written.map((_, i) => `e${i}`),
  );
});

test('the idempotency record an event carries comes back at the next start, taken in or not', async () => {
  const dir = await tempDir('ack-journal-');
  const first = new AckJournal();
  await first.open(dir);
  const mark = { scope: 'hookgate:digest', key: 'budget:spend@1', at: Date.now(), status: 202 };
  await first.event({ ...event('e1'), idem: mark });
  await first.event(event('e2'));
  await first.taken('e1');
  const pending = await new AckJournal().open(dir);
  assert.deepEqual(pending.keys, [mark]);
  assert.deepEqual(
    pending.events.map((e) => e.id),
    ['e2'],
  );
});
