// Delivery states in the outbox: an entry written pending, its outcome appended later as a status
// line (the log stays append-only), and every page showing each delivery's latest state, also for
// a page older than the line that settled it, and after a restart.
import assert from 'node:assert/strict';
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Outbox } from '../../plugin/hosts/standalone/storage/outbox.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const quiet = { info() {}, warn() {}, error() {} };
const entry = (id: string, status: 'pending' | 'recorded' = 'pending') => ({
  id,
  channel: 'telegram',
  to: '1',
  text: `reply ${id}`,
  runId: `run-${id}`,
  agentId: 'main',
  status,
});

test('a page shows the latest state of each delivery, wherever its status line is', async () => {
  const file = path.join(await tempDir('outbox-status-'), 'outbox.jsonl');
  const outbox = new Outbox(file, quiet);
  await outbox.append(entry('a'));
  await outbox.append(entry('b'));
  assert.equal(outbox.pending, 2);
  const settling = outbox.settle('a', { status: 'sent', messageIds: ['11', '12'] });
  // Shown at once, before the line is written.
  const [a] = (await outbox.page(1, (await outbox.page(1)).before)).deliveries;
  assert.equal(a!.status, 'sent');
  await settling;
  for (const id of ['c', 'd', 'e']) await outbox.append(entry(id, 'recorded'));
  await outbox.settle('b', { status: 'failed', error: 'HTTP 400: Bad Request: chat not found' });
  assert.equal(outbox.pending, 0);

  const states = async (o: Outbox) => {
    const seen: Record<string, unknown>[] = [];
    let before: string | undefined;
    do {
      const page = await o.page(2, before);
      seen.unshift(
        ...page.deliveries.map((d) => ({ id: d.id, status: d.status, messageIds: d.messageIds, error: d.error })),
      );
      before = page.before;
    } while (before);
    return seen;
  };
  const expected = [
    { id: 'a', status: 'sent', messageIds: ['11', '12'], error: undefined },
    { id: 'b', status: 'failed', messageIds: undefined, error: 'HTTP 400: Bad Request: chat not found' },
    { id: 'c', status: 'recorded', messageIds: undefined, error: undefined },
    { id: 'd', status: 'recorded', messageIds: undefined, error: undefined },
    { id: 'e', status: 'recorded', messageIds: undefined, error: undefined },
  ];
  assert.deepEqual(await states(outbox), expected);
  assert.deepEqual(
    (await outbox.list()).map((d) => d.status),
    ['sent', 'failed', 'recorded', 'recorded', 'recorded'],
  );
  assert.equal(outbox.appended, 5, 'status lines are not deliveries');
  await outbox.close();

  // After a restart, from the file alone; an entry from before delivery states shows as recorded.
  await appendFile(
    file,
    `${JSON.stringify({ channel: 'slack', text: 'old', runId: 'r0', agentId: 'main', at: new Date().toISOString() })}\n`,
  );
  const reopened = new Outbox(file, quiet);
  const all = await states(reopened);
  assert.deepEqual(all.slice(0, 5), expected);
  assert.equal(all[5]!.status, 'recorded');
  assert.equal(reopened.lastRoute('main')?.channel, 'slack');
  await reopened.close();
});

test('a delivery left pending by a stopped process stays pending', async () => {
  const file = path.join(await tempDir('outbox-status-'), 'outbox.jsonl');
  const first = new Outbox(file, quiet);
  await first.append(entry('p'));
  await first.append(entry('q', 'recorded'));
  await first.close();
  const second = new Outbox(file, quiet);
  assert.deepEqual(
    (await second.page(10)).deliveries.map((d) => d.status),
    ['pending', 'recorded'],
  );
  await second.close();
});

test('a retrying delivery shows its attempts and next time, also after a restart and past rotated segments', async () => {
  const file = path.join(await tempDir('outbox-status-'), 'outbox.jsonl');
  const limits = { segmentBytes: 2048, retainBytes: 64 * 1024 };
  const first = new Outbox(file, quiet, limits);
  await first.append(entry('r'));
  const attempts = [{ at: '2026-11-25T10:00:00.000Z', error: 'HTTP 502: Bad Gateway' }];
  await first.settle('r', {
    status: 'retrying',
    attempts,
    nextAttemptAt: '2026-11-25T10:00:10.000Z',
    partsSent: 1,
    messageIds: ['7'],
  });
  assert.equal(first.pending, 1);
  // Later deliveries push r's lines into older segments.
  for (let i = 0; i < 40; i++) await first.append({ ...entry(`x${i}`, 'recorded'), text: 'y'.repeat(100) });
  const shown = async (o: Outbox) => {
    let before: string | undefined;
    for (;;) {
      const page = await o.page(5, before);
      const r = page.deliveries.find((d) => d.id === 'r');
      if (r) return r;
      before = page.before;
      if (!before) return undefined;
    }
  };
  const expected = {
    ...entry('r'),
    status: 'retrying',
    attempts,
    nextAttemptAt: '2026-11-25T10:00:10.000Z',
    partsSent: 1,
    messageIds: ['7'],
  };
  const { at: _at, ...live } = (await shown(first))!;
  assert.deepEqual(live, expected);
  await first.close();

  const second = new Outbox(file, quiet, limits);
  const { at: _at2, ...after } = (await shown(second))!;
  assert.deepEqual(after, expected);
  // Settled: the whole state replaces the last one (no nextAttemptAt left over).
  await second.settle('r', { status: 'sent', messageIds: ['7', '9'], attempts });
  const { at: _at3, ...sent } = (await shown(second))!;
  assert.deepEqual(sent, { ...entry('r'), status: 'sent', messageIds: ['7', '9'], attempts });
  await second.close();
});
