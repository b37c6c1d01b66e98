// log/commit-rounds.ts: when the logs write, in rounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CommitRounds,
  LONE_ROUND_LINES,
  ROUND_GAP_MS,
} from '../../../plugin/hosts/standalone/storage/log/commit-rounds.ts';

test('commit rounds: writes asked for in one turn run together; under load the next round waits out the gap', async () => {
  const rounds = new CommitRounds();
  const ran: { name: string; at: number }[] = [];
  const note = (name: string): number => ran.push({ name, at: performance.now() });
  const round = (name: string, then?: () => void): Promise<void> =>
    new Promise((resolve) =>
      rounds.inNextRound(() => {
        note(name);
        then?.();
        resolve();
      }),
    );
  // A microtask queued by the first write runs only once the round has run them all: they ran as one.
  for (let i = 0; i <= LONE_ROUND_LINES; i++) rounds.lineQueued();
  await Promise.all([round('a', () => queueMicrotask(() => note('microtask after a'))), round('b'), round('c')]);
  assert.deepEqual(
    ran.map((r) => r.name),
    ['a', 'b', 'c', 'microtask after a'],
  );

  await round('d');
  const gap = ran.at(-1)!.at - ran[0]!.at;
  assert.ok(gap >= ROUND_GAP_MS - 0.05, `the next round ran ${gap.toFixed(3)} ms after the first`);
});

test('commit rounds: after a round of a lone line the next runs on the next turn; after a loaded one, after the gap', async () => {
  const order = async (linesInFirstRound: number): Promise<string[]> => {
    const rounds = new CommitRounds();
    const seen: string[] = [];
    for (let i = 0; i < linesInFirstRound; i++) rounds.lineQueued();
    await new Promise<void>((done) =>
      rounds.inNextRound(() => {
        // Asked for from inside a round: at once, the gap has not passed.
        rounds.inNextRound(() => {
          seen.push('next round');
          if (seen.length === 2) done();
        });
        setImmediate(() => {
          seen.push('next turn');
          if (seen.length === 2) done();
        });
      }),
    );
    return seen;
  };
  assert.deepEqual(await order(1), ['next round', 'next turn']);
  assert.deepEqual(await order(LONE_ROUND_LINES + 1), ['next turn', 'next round']);
});
