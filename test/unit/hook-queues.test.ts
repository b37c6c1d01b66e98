// The run queue's order between hooks (plugin/runs/hook-queues.ts): the next run is the oldest of the
// hook that started one least recently, among hooks under their own limit; each hook keeps its order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HookQueues } from '../../plugin/runs/hook-queues.ts';
import { acceptedRun } from '../helpers/recording-host.ts';

const job = (hookId: string, n: number) => ({ ...acceptedRun(`${hookId}-${n}`, hookId), hookId });
const NO_LIMITS = new Map<string, number>();

test("a flood on one hook: another hook's run is next as soon as it comes, then they alternate", () => {
  const q = new HookQueues();
  for (let n = 0; n < 5; n++) q.push(job('flood', n));
  assert.equal(q.take(NO_LIMITS)!.runId, 'flood-0');
  q.push(job('quiet', 0));
  q.push(job('quiet', 1));
  const order = [];
  for (let next = q.take(NO_LIMITS); next; next = q.take(NO_LIMITS)) order.push(next.runId);
  assert.deepEqual(order, ['quiet-0', 'flood-1', 'quiet-1', 'flood-2', 'flood-3', 'flood-4']);
  assert.equal(q.size, 0);
});

test('a hook at its own limit gives the slot to another; its own runs wait until one of its runs ends', () => {
  const q = new HookQueues();
  const limits = new Map([['alerts', 1]]);
  q.push(job('alerts', 0));
  q.push(job('alerts', 1));
  q.push(job('agent', 0));
  const a0 = q.take(limits)!;
  assert.equal(a0.runId, 'alerts-0');
  assert.equal(q.take(limits)!.runId, 'agent-0');
  assert.equal(q.take(limits), undefined, 'alerts is at its limit');
  q.ended(a0);
  assert.equal(q.take(limits)!.runId, 'alerts-1');
});

test('drain hands back every waiting run and leaves none', () => {
  const q = new HookQueues();
  q.push(job('a', 0));
  q.push(job('b', 0));
  q.push(job('a', 1));
  assert.deepEqual(
    q.drain().map((j) => j.runId),
    ['a-0', 'a-1', 'b-0'],
  );
  assert.equal(q.size, 0);
  assert.equal(q.take(NO_LIMITS), undefined);
});
