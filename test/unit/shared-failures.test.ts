// The failure book on the queue's Redis (plugin/failures/shared-failures.ts) against a real
// redis-server: a failure recorded while Redis is away waits in the outbox file, survives a restart
// of the instance and is pushed once Redis is back; past a bound the hook holding the most gives up
// its closed failures first, then its oldest open ones, and the other hooks keep theirs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ActionQueue } from '../../plugin/queue/action-queue.ts';
import { SharedFailures, type SharedRecord, type FailureBounds } from '../../plugin/failures/shared-failures.ts';
import type { Logger } from '../../plugin/host.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { waitUntil } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const LONG_MS = 60_000;
const quiet: Logger = { info() {}, warn() {}, error() {} };

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

function queueOn(url: string, name: string): ActionQueue {
  return new ActionQueue(
    { url, name, keyPrefix: 'hookgate:', leaseMs: 30_000, maxWaiting: 1000, timeoutMs: 1000 },
    quiet,
  );
}

let n = 0;
function failureOf(hook: string, text = 'prompt'): SharedRecord {
  const at = new Date(Date.now() + n).toISOString();
  const id = `fail_${(++n).toString(16).padStart(16, '0')}`;
  return {
    failure: {
      id,
      kind: 'run',
      runId: `run-${n}`,
      hook,
      agentId: 'main',
      attempts: 1,
      lastError: 'refused',
      firstAt: at,
      lastAt: at,
      state: 'open',
    },
    action: { kind: 'queued', payload: text },
    share: hook,
  };
}

async function open(queue: ActionQueue, outbox?: string, bounds?: FailureBounds): Promise<SharedFailures> {
  return SharedFailures.open(queue, outbox, quiet, bounds);
}

test('a failure recorded while Redis is away waits in the outbox, across a restart, and is pushed once Redis is back', async () => {
  const own = await startRedis();
  const dir = await tempDir('hookgate-outbox-');
  const outbox = path.join(dir, 'failures-outbox.jsonl');
  let queue = queueOn(own.url, 'outbox');
  await queue.connect();
  let book = await open(queue, outbox);
  try {
    await own.kill();
    const record = failureOf('wake');
    await book.record(record);
    assert.equal(book.waiting, 1);
    await assert.rejects(book.page({ limit: 10, state: 'all' }), { code: 'queue_unavailable' });
    // The instance restarts while Redis is still away: the outbox file keeps the failure.
    await book.close();
    await queue.close();
    queue = queueOn(own.url, 'outbox');
    await queue.connect();
    book = await open(queue, outbox);
    assert.equal(book.waiting, 1);
    await own.start();
    await waitUntil(() => book.waiting === 0, 'the outbox pushed', LONG_MS);
    const { failures } = await book.page({ limit: 10, state: 'all' });
    assert.deepEqual(failures, [record.failure]);
  } finally {
    await book.close();
    await queue.close();
    await own.stop();
  }
});

test('past the bound, the hook holding the most loses its closed failures first, then its oldest open; others keep theirs', async () => {
  const queue = queueOn(redis.url, 'bounds');
  await queue.connect();
  const book = await open(queue, undefined, { count: 4, text: 1_000_000 });
  try {
    const quietHook = failureOf('quiet');
    await book.record(quietHook);
    const flood = [failureOf('flood'), failureOf('flood'), failureOf('flood')];
    for (const r of flood) await book.record(r);
    await book.dismiss(flood[1]!.failure.id);
    // A fifth: the flood gives up its dismissed one, not its oldest open nor the quiet hook's.
    const fifth = failureOf('flood');
    await book.record(fifth);
    let ids = (await book.page({ limit: 10, state: 'all' })).failures.map((f) => f.id);
    assert.deepEqual(
      ids,
      [fifth, flood[2]!, flood[0]!, quietHook].map((r) => r.failure.id),
    );
    // A sixth: now its oldest open one goes.
    const sixth = failureOf('flood');
    await book.record(sixth);
    ids = (await book.page({ limit: 10, state: 'all' })).failures.map((f) => f.id);
    assert.deepEqual(
      ids,
      [sixth, fifth, flood[2]!, quietHook].map((r) => r.failure.id),
    );
    // Pages of one walk the same list.
    const walked: string[] = [];
    let before: string | undefined;
    do {
      const page = await book.page({ limit: 1, state: 'all', ...(before ? { before: Number(before) } : {}) });
      walked.push(...page.failures.map((f) => f.id));
      before = page.before;
    } while (before);
    assert.deepEqual(walked, ids);
  } finally {
    await book.close();
    await queue.close();
  }
});

test('a replay is claimed once: a second claim answers the first run; again claims anew; an undo reopens it', async () => {
  const queue = queueOn(redis.url, 'claims');
  await queue.connect();
  const book = await open(queue);
  try {
    const record = failureOf('agent');
    await book.record(record);
    const { id } = record.failure;
    const claims = await Promise.all([book.claimReplay(id, 'run-a', false), book.claimReplay(id, 'run-b', false)]);
    assert.equal(claims.filter((c) => c.claimed).length, 1);
    const first = claims.find((c) => c.claimed)!;
    const second = claims.find((c) => !c.claimed)!;
    assert.equal(second.claimed === false && second.runId, first.failure.replayedBy);
    const again = await book.claimReplay(id, 'run-c', true);
    assert.equal(again.claimed, true);
    if (again.claimed) await again.undo();
    // Undone: back to what it was before that claim (replayed by the first run).
    assert.equal((await book.get(id))!.replayedBy, first.failure.replayedBy);
    await assert.rejects(book.claimReplay('fail_ffffffffffffffff', 'run-d', false), { code: 'not_found' });
  } finally {
    await book.close();
    await queue.close();
  }
});
