// log/commit-rounds.ts: when the logs write, in rounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommitRounds, ROUND_MAX_WAIT_MS } from '../../../plugin/hosts/standalone/storage/log/commit-rounds.ts';

test('commit rounds: writes asked for in one turn run together, after that turn', async () => {
  const rounds = new CommitRounds();
  const seen: string[] = [];
  const round = (name: string, then?: () => void): Promise<void> =>
    new Promise((resolve) =>
      rounds.inNextRound(() => {
        seen.push(name);
        then?.();
        resolve();
      }),
    );
  const writes = [round('a', () => queueMicrotask(() => seen.push('microtask after a'))), round('b')];
  // Asked for from a promise continuation of the same turn: still this round.
  await Promise.resolve().then(() => {
    writes.push(round('c'));
  });
  seen.push('end of the turn');
  await Promise.all(writes);
  // A microtask queued by the first write runs only once the round has run them all: they ran as one.
  assert.deepEqual(seen, ['end of the turn', 'a', 'b', 'c', 'microtask after a']);
});

test('commit rounds: a round waits while each turn brings new lines, and runs on the first turn that brings none', async () => {
  // Its longest wait out of the way: a busy machine may take a millisecond between two turns.
  const rounds = new CommitRounds(60_000);
  const seen: string[] = [];
  const ran = new Promise<void>((resolve) =>
    rounds.inNextRound(() => {
      seen.push('round');
      resolve();
    }),
  );
  // A line queued after the round was asked for, then one in each of the next two turns.
  let lines = 0;
  const arrive = (): void => {
    rounds.lineQueued();
    seen.push(`line ${++lines}`);
    if (lines < 3) setImmediate(arrive);
  };
  arrive();
  await ran;
  assert.deepEqual(seen, ['line 1', 'line 2', 'line 3', 'round']);
});

test('commit rounds: under a steady stream of lines a round still runs, once it has waited its longest', async () => {
  const rounds = new CommitRounds();
  const asked = performance.now();
  let running = true;
  const ran = new Promise<number>((resolve) =>
    rounds.inNextRound(() => {
      running = false;
      resolve(performance.now());
    }),
  );
  const arrive = (): void => {
    if (!running) return;
    rounds.lineQueued();
    setImmediate(arrive);
  };
  arrive();
  const at = await ran;
  assert.ok(at - asked >= ROUND_MAX_WAIT_MS, `the round ran ${(at - asked).toFixed(3)} ms after it was asked for`);
});
