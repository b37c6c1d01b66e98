// The failure book's parts that need no model: the main-session events per hook in a short window
// (the code takes the window's length), a reply out of tries listed and replayed to its channel, reasons masked, and the bounds (closed failures dropped first, then the oldest).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FailureEvents } from '../../../plugin/failures/failure-events.ts';
import { FailureBook, MAX_FAILURES } from '../../../plugin/failures/failures.ts';
import { AdminAnswer, type AdminCall } from '../../../plugin/admin/admin-call.ts';
import { HookError } from '../../../plugin/errors.ts';
import type { GatewayHost } from '../../../plugin/host.ts';
import { post, startTestGateway } from '../../helpers/recording-host.ts';
import { waitUntil } from '../../helpers/common.ts';

function recordingSessions(): Pick<GatewayHost, 'sessions' | 'logger'> & { events: { key: string; text: string }[] } {
  const events: { key: string; text: string }[] = [];
  return {
    events,
    logger: { info() {}, warn() {}, error() {} },
    sessions: {
      mainSessionKey: (agentId) => `agent:${agentId}:main`,
      enqueueSystemEvent: (key, text) => void events.push({ key, text }),
      requestHeartbeat() {},
      lastRoute: () => undefined,
    },
  };
}

const notice = (hook: string, reason: string, agentId = 'main') => ({
  hook,
  agentId,
  runId: `run-${reason}`,
  what: 'the agent run',
  attempts: 2,
  reason,
});

test('each hook is told at once, then at most once a window, the held ones counted into the next', async () => {
  const host = recordingSessions();
  const events = new FailureEvents(host, 300);
  try {
    events.notify(notice('A', 'a1'));
    events.notify(notice('A', 'a2'));
    events.notify(notice('B', 'b1', 'ops'));
    events.notify(notice('A', 'a3'));
    events.notify(notice('A', 'a4'));
    assert.deepEqual(host.events, [
      { key: 'agent:main:main', text: 'Hook A: the agent run failed after 2 attempts: a1' },
      { key: 'agent:ops:main', text: 'Hook B: the agent run failed after 2 attempts: b1' },
    ]);
    // No further failure: the window's end brings the latest, with the others counted.
    await waitUntil(() => host.events.length === 3, 'the held failures of A');
    assert.deepEqual(host.events[2], {
      key: 'agent:main:main',
      text: 'Hook A: the agent run failed after 2 attempts: a4 … and 2 more',
    });
    // A new window opened with that event: the next failure waits for it, alone.
    events.notify(notice('A', 'a5'));
    assert.equal(host.events.length, 3);
    await waitUntil(() => host.events.length === 4, 'the next window of A');
    assert.equal(host.events[3]!.text, 'Hook A: the agent run failed after 2 attempts: a5');
  } finally {
    events.close();
  }
});

test('a reply out of tries is listed masked, told once, and replayed to its channel', async () => {
  const lastError = 'telegram answered 502 (token=123456:ABCDEF-secret-value)\nBearer abcdefghijklmnop';
  let failing = true;
  const gw = await startTestGateway({
    channels: ['telegram', 'slack'],
    hooks: { retry: { attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 0.1 } },
    turn: async () => ({ status: 'ok', reply: 'the reply to deliver' }),
    send: async () =>
      failing
        ? { status: 'failed', retryable: true, description: lastError, sentParts: 0, messageIds: [] }
        : { status: 'sent', messageIds: ['1'] },
  });
  const admin = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const [route, query] = path.split('?');
    const call: AdminCall = {
      method,
      parts: route!.split('/'),
      query: new URLSearchParams(query ?? ''),
      body: () => Promise.resolve(body),
    };
    return gw.plugin.admin(call);
  };
  try {
    const accepted = await post(gw.url, '/hooks/agent', { message: 'x', name: 'CI', channel: 'telegram', to: '42' });
    assert.equal(accepted.status, 202);
    const runId = accepted.body.runId as string;
    await waitUntil(async () => {
      const page = (await admin('GET', 'failures')) as { failures: unknown[] };
      return page.failures.length === 1;
    }, 'the dead letter');
    const page = (await admin('GET', 'failures')) as { failures: any[] };
    const [failure] = page.failures;
    assert.equal(failure.kind, 'delivery');
    assert.equal(failure.runId, runId);
    assert.equal(failure.hook, 'CI');
    assert.equal(failure.channel, 'telegram');
    assert.equal(failure.to, '42');
    assert.equal(failure.attempts, 3);
    assert.equal(failure.lastError, 'telegram answered 502 (token=[redacted]) Bearer [redacted]');
    await waitUntil(() => gw.rec.events.some((e) => e.text.startsWith('Hook CI: the delivery')), 'the failure event');
    assert.deepEqual(
      gw.rec.events.filter((e) => e.text.startsWith('Hook CI: the delivery')).map((e) => [e.sessionKey, e.text]),
      [['agent:main:main', 'Hook CI: the delivery to telegram failed after 3 attempts: ' + failure.lastError]],
    );
    assert.equal(gw.rec.deliveries.length, 3, 'every try went to the host');

    failing = false;
    const replay = await admin('POST', `failures/${failure.id}/replay`);
    assert.ok(replay instanceof AdminAnswer);
    assert.equal(replay.status, 202);
    const body = replay.body as { runId: string; replayOf: string };
    assert.equal(body.replayOf, runId);
    assert.deepEqual(gw.rec.deliveries.at(-1), {
      channel: 'telegram',
      to: '42',
      text: 'the reply to deliver',
      runId: body.runId,
      agentId: 'main',
    });

    // The channel is gone today: the replay is refused with the usual code and sends nothing.
    gw.host.channels = ['slack'];
    await assert.rejects(
      admin('POST', `failures/${failure.id}/replay?again=1`),
      (err: unknown) => err instanceof HookError && err.status === 400 && err.code === 'invalid_payload',
    );
    assert.equal(gw.rec.deliveries.length, 4);
  } finally {
    await gw.close();
  }
});

test('the same dead letter recorded again is one failure, with the latest attempts', async () => {
  const book = await FailureBook.open(undefined, recordingSessions(), () => {});
  const letter = {
    kind: 'delivery' as const,
    runId: 'run-1',
    hook: 'CI',
    agentId: 'main',
    channel: 'telegram' as const,
    to: '42',
    attempts: 3,
    lastError: 'failed',
    text: 'the reply',
    firstAt: '2026-11-28T10:00:00.000Z',
    lastAt: '2026-11-28T10:01:00.000Z',
  };
  await book.record(letter);
  await book.record({ ...letter, attempts: 4 });
  const all = book.page({ limit: 10, state: 'all' }).failures;
  assert.equal(all.length, 1);
  assert.equal(all[0]!.attempts, 4);
  await book.close();
});

test('over the count bound, dismissed and replayed failures go first, then the oldest open ones', async () => {
  const host = recordingSessions();
  const book = await FailureBook.open(undefined, host, () => {});
  const record = (n: number) =>
    book.record({
      kind: 'delivery',
      runId: `run-${n}`,
      hook: 'Bulk',
      agentId: 'main',
      channel: 'telegram',
      attempts: 1,
      lastError: 'failed',
      text: `text ${n}`,
      firstAt: '2026-11-28T10:00:00.000Z',
      lastAt: '2026-11-28T10:00:00.000Z',
    });
  try {
    for (let n = 0; n < MAX_FAILURES; n++) await record(n);
    const all = book.page({ limit: 1000, state: 'all' });
    assert.equal(all.failures[0]!.runId, `run-${MAX_FAILURES - 1}`, 'newest first');
    const closedA = findByRun(book, 'run-500')!;
    const closedB = findByRun(book, 'run-9000')!;
    await book.dismiss(closedA.id);
    await book.replayed(closedB.id, 'new-run');
    await record(MAX_FAILURES);
    await record(MAX_FAILURES + 1);
    assert.equal(findByRun(book, 'run-500'), undefined);
    assert.equal(findByRun(book, 'run-9000'), undefined);
    assert.ok(findByRun(book, 'run-0'), 'open ones stay while closed ones can go');
    await record(MAX_FAILURES + 2);
    assert.equal(findByRun(book, 'run-0'), undefined, 'then the oldest open one goes');
    assert.ok(findByRun(book, 'run-1'));
    assert.ok(findByRun(book, `run-${MAX_FAILURES + 2}`));
  } finally {
    await book.close();
  }
});

test('over the count bound, the hook holding the most gives up its own; another hook keeps its failures', async () => {
  const book = await FailureBook.open(undefined, recordingSessions(), () => {});
  const record = (n: number, hookId: string) =>
    book.record({
      kind: 'delivery',
      runId: `run-${hookId}-${n}`,
      // The name a sender chose says nothing of the share: each flooded failure has its own.
      hook: `name ${n}`,
      hookId,
      agentId: 'main',
      channel: 'telegram',
      attempts: 1,
      lastError: 'failed',
      text: `text ${n}`,
      firstAt: '2026-11-28T10:00:00.000Z',
      lastAt: '2026-11-28T10:00:00.000Z',
    });
  try {
    await record(0, 'alerts');
    await record(1, 'alerts');
    await book.dismiss(findByRun(book, 'run-alerts-1')!.id);
    for (let n = 0; n < MAX_FAILURES + 50; n++) await record(n, 'agent');
    assert.ok(findByRun(book, 'run-alerts-0'), "the other hook's open failure stays");
    assert.ok(findByRun(book, 'run-alerts-1'), "and its dismissed one too: the flood's share pays");
    assert.equal(findByRun(book, 'run-agent-51'), undefined, "the flood's oldest went");
    assert.ok(findByRun(book, 'run-agent-52'));
    assert.ok(findByRun(book, `run-agent-${MAX_FAILURES + 49}`));
  } finally {
    await book.close();
  }
});

function findByRun(book: FailureBook, runId: string): { id: string } | undefined {
  let before: number | undefined;
  for (;;) {
    const page = book.page({ limit: 1000, state: 'all', ...(before !== undefined ? { before } : {}) });
    const found = page.failures.find((f) => f.runId === runId);
    if (found) return found;
    if (!page.before) return undefined;
    before = Number(page.before);
  }
}
