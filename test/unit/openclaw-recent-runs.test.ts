// The OpenClaw host's run views as the reply queue's history: a run's deliveries in order with each
// one's latest state (a fallback naming the one it replaces), never the reply's text, and bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RecentRuns } from '../../plugin/hosts/openclaw/recent-runs.ts';
import type { ReplyEntry } from '../../plugin/host.ts';

const entry = (id: string, runId: string, extra: Partial<ReplyEntry> = {}): ReplyEntry & { id: string } => ({
  id,
  channel: 'telegram',
  to: '1',
  text: `secret reply of ${runId}`,
  runId,
  agentId: 'main',
  at: '2026-11-28T12:00:00.000Z',
  status: 'pending',
  ...extra,
});

test('a fallback chain reads top to bottom with each delivery’s latest state, without the text', async () => {
  const runs = new RecentRuns();
  const first = entry('d1', 'r1');
  await runs.added(first);
  await runs.changed(first, { status: 'retrying', attempts: [{ at: 'x', error: '500' }], nextAttemptAt: 'y' }, true);
  await runs.changed(first, { status: 'failed', attempts: [{ at: 'x', error: '500' }], error: '500' }, true);
  const second = entry('d2', 'r1', { to: '2', fallbackOf: 'd1' });
  await runs.added(second);
  await runs.changed(second, { status: 'sent', messageIds: ['9'] }, true);
  const chain = runs.deliveriesOf('r1');
  assert.deepEqual(
    chain.map((d) => [d.id, d.to, d.status, d.fallbackOf, d.nextAttemptAt]),
    [
      ['d1', '1', 'failed', undefined, undefined],
      ['d2', '2', 'sent', 'd1', undefined],
    ],
  );
  assert.equal(chain[0]!.attempts?.length, 1);
  assert.ok(!JSON.stringify(chain).includes('secret reply'), 'no reply text');
  assert.deepEqual(runs.deliveriesOf('unknown'), []);
});

test('the deliveries of as many runs as the view keeps, the oldest forgotten first', async () => {
  const runs = new RecentRuns(2);
  for (const runId of ['a', 'b', 'c']) await runs.added(entry(`d-${runId}`, runId));
  assert.deepEqual(runs.deliveriesOf('a'), []);
  assert.equal(runs.deliveriesOf('c').length, 1);
});
