// Retries a start finds overdue (their time passed while the process was down) go out with the pacing
// they would have had, not in one burst: in the order they were due, each after the one before by the
// time that separated them, at most hooks.retry.initialDelaySeconds. The state files are written as
// a process that stopped 80 seconds ago left them: eight retries due ten seconds apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { acceptedRun, withGateway } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const COUNT = 8;
const GAP_MS = 200;
const retry = { attempts: 3, initialDelaySeconds: GAP_MS / 1000, maxDelaySeconds: GAP_MS / 1000 };
/** Due ten seconds apart, the last ten seconds ago. */
const dueAt = (i: number, now: number): number => now - (COUNT - i) * 10_000;

async function stateFile(dir: string, name: string, records: { id: string; r: unknown }[]): Promise<void> {
  await writeFile(path.join(dir, name), records.map((line) => `${JSON.stringify(line)}\n`).join(''));
}

/**
 * Calls in the order they were due, spread from the first: call i comes at least i capped gaps after
 * it (never sooner). The allowance is the first call's own latency (its try's start is written to a
 * file opened then), which only ever narrows the first gap.
 */
function assertSpread(calls: { id: string; at: number }[], ids: string[]): void {
  assert.deepEqual(
    calls.map((c) => c.id),
    ids,
    'in the order they were due',
  );
  const ALLOWANCE_MS = 100;
  for (let i = 1; i < calls.length; i++) {
    const since = calls[i]!.at - calls[0]!.at;
    assert.ok(since >= i * GAP_MS - ALLOWANCE_MS, `call ${i} came ${since} ms after the first`);
  }
}

test('overdue run retries: one provider call after another, spread as they were due (capped), not in a burst', async () => {
  const dir = await tempDir('hookgate-overdue-');
  const now = Date.now();
  const ids = Array.from({ length: COUNT }, (_, i) => `overdue-run-${i}`);
  // Written out of order: the order is the due times'.
  await stateFile(
    dir,
    'retries.jsonl',
    [...ids].reverse().map((runId) => {
      const i = ids.indexOf(runId);
      const at = new Date(dueAt(i, now) - 1000).toISOString();
      return {
        id: runId,
        r: {
          run: acceptedRun(runId, 'Overdue'),
          attempts: [{ at, status: 'error', error: 'HTTP 503' }],
          dueAt: dueAt(i, now),
        },
      };
    }),
  );
  const calls: { id: string; at: number }[] = [];
  await withGateway(
    {
      stateDir: dir,
      hooks: { retry },
      // The fake provider: counts the calls and answers at once.
      turn: async (turn) => {
        calls.push({ id: turn.runId, at: Date.now() });
        return { status: 'ok', reply: 'back' };
      },
    },
    async (gw) => {
      await gw.finalRuns(COUNT, 30_000);
      assertSpread(calls, ids);
    },
  );
});

test('overdue reply retries: one send after another, spread as they were due (capped), not in a burst', async () => {
  const dir = await tempDir('hookgate-overdue-');
  const now = Date.now();
  const ids = Array.from({ length: COUNT }, (_, i) => `overdue-reply-${i}`);
  await stateFile(
    dir,
    'deliveries.jsonl',
    [...ids].reverse().map((id) => {
      const i = ids.indexOf(id);
      const due = dueAt(i, now);
      return {
        id,
        r: {
          id,
          channel: 'telegram',
          to: '42',
          text: `reply ${i}`,
          runId: `run-of-${id}`,
          agentId: 'main',
          hook: 'Overdue',
          at: new Date(due - 2000).toISOString(),
          status: 'retrying',
          attempts: [{ at: new Date(due - 1000).toISOString(), error: 'HTTP 502' }],
          nextAttemptAt: new Date(due).toISOString(),
        },
      };
    }),
  );
  const sends: { id: string; at: number }[] = [];
  await withGateway(
    {
      stateDir: dir,
      hooks: { retry },
      channels: ['telegram'],
      send: async (d) => {
        sends.push({ id: `overdue-reply-${/reply (\d+)/.exec(d.text)![1]}`, at: Date.now() });
        return { status: 'sent', messageIds: ['m'] };
      },
    },
    async (gw) => {
      await waitUntil(() => sends.length === COUNT && gw.plugin.replies.pending === 0, 'every reply sent', 30_000);
      assertSpread(sends, ids);
    },
  );
});
