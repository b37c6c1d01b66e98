// log/commit-rounds.ts: when the logs write, in rounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CommitRounds } from '../../../plugin/hosts/standalone/storage/log/commit-rounds.ts';

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

test('commit rounds: a write asked for during a round runs in the next one, on the next turn', async () => {
  const rounds = new CommitRounds();
  const seen: string[] = [];
  await new Promise<void>((done) =>
    rounds.inNextRound(() => {
      // Queued during the round, before the next round is asked for: the next turn runs both, this first.
      setImmediate(() => seen.push('an immediate queued during the round'));
      rounds.inNextRound(() => {
        seen.push('next round');
        done();
      });
      seen.push('first round');
    }),
  );
  assert.deepEqual(seen, ['first round', 'an immediate queued during the round', 'next round']);
});
