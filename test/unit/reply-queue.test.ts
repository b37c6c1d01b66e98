// The core's reply queue with OpenClaw's single tries (hosts/openclaw/reply-sends.ts): the send goes
// to a fake Telegram on loopback through a channel adapter that fails as OpenClaw's Telegram adapter
// (grammY) fails, with error_code and parameters.retry_after. The first try is made before the run
// ends: a 5xx or 429 is tried again (the announced wait honoured), the last failure is one dead
// letter, a refusal is the run's error at once, and a restart resumes what waited, including a
// record kept by the plugin before the queue moved into the core.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Logger } from '../../plugin/host.ts';
import { ReplyQueue, ReplyRefused, type QueuedReply, type ReplyDeadLetter } from '../../plugin/replies/reply-queue.ts';
import type { RetryPolicy } from '../../plugin/retry/retry-policy.ts';
import { openClawReplies, reasonOf } from '../../plugin/hosts/openclaw/reply-sends.ts';
import type { OpenClawPluginApi } from '../../plugin/hosts/openclaw/api.ts';
import { ServiceQueue } from '../../plugin/hosts/openclaw/run-queue.ts';
import { fakeTelegram, tooManyRequests } from '../helpers/fake-channels/telegram.ts';
import type { FakePlatform } from '../helpers/fake-channels/fake-platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { waitUntil } from '../helpers/common.ts';

const TOKEN = '123456:TELEGRAM-test-token';
const quiet: Logger = { info() {}, warn() {}, error() {} };
let telegram: FakePlatform;

before(async () => {
  telegram = await fakeTelegram(TOKEN);
});
after(() => telegram?.close());

/** OpenClaw's runtime as far as a reply goes: a Telegram adapter that throws as grammY does. */
function fakeApi(): OpenClawPluginApi {
  const sendText = async ({ to, text }: { to: string; text: string }): Promise<void> => {
    const res = await fetch(`${telegram.url}/bot${TOKEN}/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: to, text }),
    });
    const body = (await res.json()) as { ok: boolean; error_code?: number; description?: string; parameters?: object };
    if (!body.ok)
      throw Object.assign(new Error(`Call to 'sendMessage' failed! (${body.error_code}: ${body.description})`), {
        error_code: body.error_code,
        description: body.description,
        parameters: body.parameters ?? {},
      });
  };
  return {
    runtime: { channel: { outbound: { loadAdapter: async () => ({ sendText }) } } },
  } as unknown as OpenClawPluginApi;
}

let chat = 1000;
const reply = (): QueuedReply => ({
  channel: 'telegram',
  to: String(++chat),
  text: `reply ${chat}`,
  runId: `run-${chat}`,
  agentId: 'main',
  hook: `hook ${chat}`,
});
const sentTo = (to: string | undefined) => telegram.arrivals.filter((a) => String(a.body?.chat_id) === to);
const serverError = { status: 502, body: { ok: false, error_code: 502, description: 'Bad Gateway' } };

async function open(over: { policy?: RetryPolicy; stateDir?: string } = {}) {
  const letters: ReplyDeadLetter[] = [];
  const scheduled = { count: 0 };
  const policy = over.policy ?? { attempts: 3, initialDelaySeconds: 0.05, maxDelaySeconds: 0.2 };
  const service = new ServiceQueue();
  service.attach((fn) => fn());
  const queue = await ReplyQueue.open({
    host: { logger: quiet, replies: openClawReplies(fakeApi(), service, () => ({})) },
    file: over.stateDir && path.join(over.stateDir, 'deliveries.jsonl'),
    retry: () => policy,
    metrics: { retryScheduled: () => void scheduled.count++ },
  });
  queue.onDeadLetter((l) => void letters.push(l));
  return { queue, letters, scheduled };
}

test('sent at the first try: the receipt says sent, nothing waits', async () => {
  const { queue } = await open();
  const r = reply();
  const receipt = await queue.add(r);
  assert.deepEqual(await receipt.outcome, { channel: 'telegram', to: r.to, status: 'sent' });
  assert.equal(queue.pending, 0);
  await queue.close(100);
});

test('a 5xx, then a 429 with retry_after: tried again, the wait honoured, then sent', async () => {
  // The announced second is within the cap: it is waited out whole.
  const { queue, letters, scheduled } = await open({
    policy: { attempts: 3, initialDelaySeconds: 0.05, maxDelaySeconds: 5 },
  });
  const r = reply();
  telegram.scripted.push(serverError, tooManyRequests(1));
  const receipt = await queue.add(r);
  assert.equal(queue.pending, 1);
  assert.deepEqual(await receipt.outcome, { channel: 'telegram', to: r.to, status: 'sent' });
  const tries = sentTo(r.to);
  assert.equal(tries.length, 3);
  assert.ok(tries[2]!.at - tries[1]!.at >= 1000, `retried ${tries[2]!.at - tries[1]!.at} ms after a 1 s retry_after`);
  assert.deepEqual(letters, []);
  assert.equal(scheduled.count, 2, 'two retries counted');
  await queue.close(100);
});

test('failing at every try: one dead letter with the attempts and the last error, the outcome failed', async () => {
  const { queue, letters } = await open();
  const r = reply();
  telegram.scripted.push(serverError, serverError, serverError);
  const receipt = await queue.add(r);
  assert.deepEqual(await receipt.outcome, { channel: 'telegram', to: r.to, status: 'failed' });
  assert.equal(sentTo(r.to).length, 3);
  await waitUntil(() => letters.length === 1, 'the dead letter');
  const { firstAt, lastAt, ...letter } = letters[0]!;
  assert.ok(Date.parse(lastAt) >= Date.parse(firstAt));
  assert.deepEqual(letter, {
    kind: 'delivery',
    runId: r.runId,
    hook: r.hook,
    agentId: 'main',
    channel: 'telegram',
    to: r.to,
    text: r.text,
    attempts: 3,
    lastError: "Call to 'sendMessage' failed! (502: Bad Gateway)",
  });
  await queue.close(100);
});

test("a refusal (400) is the run's error at once: not tried again, no dead letter", async () => {
  const { queue, letters } = await open();
  const r = { ...reply(), to: '404' };
  const before = sentTo('404').length;
  await assert.rejects(
    queue.add(r),
    (err: unknown) => err instanceof ReplyRefused && /chat not found/.test(err.message),
  );
  assert.equal(sentTo('404').length, before + 1);
  assert.equal(queue.pending, 0);
  assert.deepEqual(letters, []);
  await queue.close(100);
});

test('with one attempt allowed, a 5xx is not tried again', async () => {
  const { queue } = await open({ policy: { attempts: 1, initialDelaySeconds: 0.05, maxDelaySeconds: 0.05 } });
  telegram.scripted.push(serverError);
  await assert.rejects(queue.add(reply()), /502/);
  assert.equal(queue.pending, 0);
  await queue.close(100);
});

test('a restart resumes a waiting reply from the state dir, once', async () => {
  const stateDir = await tempDir('hookgate-replies-');
  const policy = { attempts: 3, initialDelaySeconds: 0.4, maxDelaySeconds: 0.4 };
  const first = await open({ stateDir, policy });
  const r = reply();
  telegram.scripted.push(serverError);
  await first.queue.add(r);
  assert.equal(first.queue.pending, 1);
  await first.queue.close(100);

  const second = await open({ stateDir, policy });
  assert.equal(second.queue.pending, 1);
  assert.equal(second.queue.resume(), 1);
  await waitUntil(() => second.queue.pending === 0, 'the resumed reply sent', 10_000);
  assert.equal(sentTo(r.to).length, 2, 'tried once before the restart and once after');
  await second.queue.close(100);
  const third = await open({ stateDir, policy });
  assert.equal(third.queue.pending, 0, 'a delivered reply is not resumed again');
  await third.queue.close(100);
});

test('a reply kept by the OpenClaw plugin before the queue moved into the core is resumed, once', async () => {
  const stateDir = await tempDir('hookgate-replies-old-');
  const to = String(++chat);
  const waiting = {
    delivery: { channel: 'telegram', to, text: `old ${to}`, runId: `run-old-${to}`, agentId: 'main' },
    hook: 'github',
    tries: 2,
    firstAt: new Date().toISOString(),
    lastError: 'Bad Gateway',
    nextAt: Date.now(),
  };
  await writeFile(
    path.join(stateDir, 'deliveries.jsonl'),
    `${JSON.stringify({ id: waiting.delivery.runId, r: waiting })}\n`,
  );
  const { queue, letters } = await open({ stateDir });
  assert.equal(queue.resume(), 1);
  await waitUntil(() => queue.pending === 0, 'the old reply sent', 10_000);
  assert.deepEqual(
    sentTo(to).map((a) => a.body?.text),
    [`old ${to}`],
  );
  assert.deepEqual(letters, []);
  await queue.close(100);
});

test('a failure reason keeps no credential a channel library quoted, and one line', () => {
  const reason = reasonOf(
    new Error(
      'request to https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage failed, ' +
        'Authorization: Bearer sk-live-abcdef, slack xoxb-1234-5678-abcdef\nsecond line with the text',
    ),
  );
  assert.equal(
    reason,
    'request to https://api.telegram.org/… failed, Authorization: Bearer [redacted] slack [redacted]',
  );
});
