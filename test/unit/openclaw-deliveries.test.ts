// Reply deliveries in OpenClaw tried again on hooks.retry: the send goes to a fake Telegram on loopback
// and fails as OpenClaw's Telegram adapter (grammY) fails, with error_code and parameters.retry_after.
// A 5xx or 429 is tried again (the announced wait honoured), the last failure is one dead letter, a
// refusal is the run's error at once, a restart resumes what waited, and a dead letter reaches the
// core's failure book.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Delivery, Logger } from '../../plugin/host.ts';
import {
  OpenClawDeliveries,
  reasonOf,
  type DeliveryDeadLetter,
  type DeliveryOptions,
} from '../../plugin/hosts/openclaw/deliveries.ts';
import type { RetryPolicy } from '../../plugin/retry/retry-policy.ts';
import { deliveryDeadLetters } from '../../plugin/hosts/openclaw/dead-letters.ts';
import type { HooksPlugin } from '../../plugin/host-kit.ts';
import { fakeTelegram, tooManyRequests } from '../helpers/fake-channels/telegram.ts';
import type { FakePlatform } from '../helpers/fake-channels/fake-platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const TOKEN = '123456:TELEGRAM-test-token';
const quiet: Logger = { info() {}, warn() {}, error() {} };
let telegram: FakePlatform;

before(async () => {
  telegram = await fakeTelegram(TOKEN);
});
after(() => telegram?.close());

/** A Telegram send as grammY makes it: a failed call throws with the Bot API's error_code and parameters. */
async function send(d: Delivery): Promise<void> {
  const res = await fetch(`${telegram.url}/bot${TOKEN}/sendMessage`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chat_id: d.to, text: d.text }),
  });
  const body = (await res.json()) as { ok: boolean; error_code?: number; description?: string; parameters?: object };
  if (!body.ok)
    throw Object.assign(new Error(`Call to 'sendMessage' failed! (${body.error_code}: ${body.description})`), {
      error_code: body.error_code,
      description: body.description,
      parameters: body.parameters ?? {},
    });
}

let chat = 1000;
const delivery = (): Delivery => ({
  channel: 'telegram',
  to: String(++chat),
  text: `reply ${chat}`,
  runId: `run-${chat}`,
  agentId: 'main',
});
const sentTo = (to: string | undefined) => telegram.arrivals.filter((a) => String(a.body?.chat_id) === to);
const serverError = { status: 502, body: { ok: false, error_code: 502, description: 'Bad Gateway' } };

async function open(over: Partial<DeliveryOptions> & { policy?: RetryPolicy } = {}) {
  const letters: DeliveryDeadLetter[] = [];
  const scheduled = { count: 0 };
  const policy = over.policy ?? { attempts: 3, initialDelaySeconds: 0.05, maxDelaySeconds: 0.2 };
  const deliveries = await OpenClawDeliveries.open({
    send,
    retry: () => policy,
    hookOf: (runId) => `hook of ${runId}`,
    deadLetter: (l) => letters.push(l),
    retryScheduled: () => scheduled.count++,
    logger: quiet,
    stateDir: undefined,
    ...over,
  });
  return { deliveries, letters, scheduled };
}

test('sent at the first try: the receipt says sent, nothing waits', async () => {
  const { deliveries } = await open();
  const d = delivery();
  const receipt = await deliveries.deliver(d);
  assert.deepEqual(await receipt.outcome, { channel: 'telegram', to: d.to, status: 'sent' });
  assert.equal(deliveries.waiting, 0);
  await deliveries.close();
});

test('a 5xx, then a 429 with retry_after: tried again, the wait honoured, then sent', async () => {
  const { deliveries, letters, scheduled } = await open();
  const d = delivery();
  telegram.scripted.push(serverError, tooManyRequests(1));
  const receipt = await deliveries.deliver(d);
  assert.equal(deliveries.waiting, 1);
  assert.deepEqual(await receipt.outcome, { channel: 'telegram', to: d.to, status: 'sent' });
  const tries = sentTo(d.to);
  assert.equal(tries.length, 3);
  assert.ok(tries[2]!.at - tries[1]!.at >= 1000, `retried ${tries[2]!.at - tries[1]!.at} ms after a 1 s retry_after`);
  assert.deepEqual(letters, []);
  assert.equal(scheduled.count, 2, 'two retries counted');
  await deliveries.close();
});

test('failing at every try: one dead letter with the attempts and the last error, the outcome failed', async () => {
  const { deliveries, letters } = await open();
  const d = delivery();
  telegram.scripted.push(serverError, serverError, serverError);
  const receipt = await deliveries.deliver(d);
  assert.deepEqual(await receipt.outcome, { channel: 'telegram', to: d.to, status: 'failed' });
  assert.equal(sentTo(d.to).length, 3);
  assert.equal(letters.length, 1);
  const { firstAt, lastAt, ...letter } = letters[0]!;
  assert.ok(Date.parse(lastAt) >= Date.parse(firstAt));
  assert.deepEqual(letter, {
    kind: 'delivery',
    runId: d.runId,
    hook: `hook of ${d.runId}`,
    agentId: 'main',
    channel: 'telegram',
    to: d.to,
    text: d.text,
    attempts: 3,
    lastError: "Call to 'sendMessage' failed! (502: Bad Gateway)",
  });
  await deliveries.close();
});

test("a refusal (400) is the run's error at once: not tried again, no dead letter", async () => {
  const { deliveries, letters } = await open();
  const d = { ...delivery(), to: '404' };
  const before = sentTo('404').length;
  await assert.rejects(deliveries.deliver(d), /chat not found/);
  assert.equal(sentTo('404').length, before + 1);
  assert.equal(deliveries.waiting, 0);
  assert.deepEqual(letters, []);
  await deliveries.close();
});

test('with one attempt allowed, a 5xx is not tried again', async () => {
  const { deliveries } = await open({ policy: { attempts: 1, initialDelaySeconds: 0.05, maxDelaySeconds: 0.05 } });
  telegram.scripted.push(serverError);
  await assert.rejects(deliveries.deliver(delivery()), /502/);
  assert.equal(deliveries.waiting, 0);
  await deliveries.close();
});

test('a restart resumes a waiting delivery from the state dir, once', async () => {
  const stateDir = await tempDir('hookgate-oc-deliveries-');
  const policy = { attempts: 3, initialDelaySeconds: 0.4, maxDelaySeconds: 0.4 };
  const first = await open({ stateDir, policy });
  const d = delivery();
  telegram.scripted.push(serverError);
  await first.deliveries.deliver(d);
  assert.equal(first.deliveries.waiting, 1);
  await first.deliveries.close();

  const second = await open({ stateDir, policy });
  assert.equal(second.deliveries.waiting, 1);
  const deadline = Date.now() + 10_000;
  while (second.deliveries.waiting > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(second.deliveries.waiting, 0);
  assert.equal(sentTo(d.to).length, 2, 'tried once before the restart and once after');
  await second.deliveries.close();
  const third = await open({ stateDir, policy });
  assert.equal(third.deliveries.waiting, 0, 'a delivered reply is not resumed again');
  await third.deliveries.close();
});

test("a dead letter goes to the core's failure book; before the plugin is up, to the log", async () => {
  const letter: DeliveryDeadLetter = {
    kind: 'delivery',
    runId: 'run-x',
    hook: 'github',
    agentId: 'main',
    channel: 'telegram',
    to: '7',
    text: 'the reply',
    attempts: 5,
    lastError: 'Bad Gateway',
    firstAt: '2026-11-25T07:00:00.000Z',
    lastAt: '2026-11-25T08:00:00.000Z',
  };
  const logged: { msg: string; fields?: object }[] = [];
  const logger: Logger = { info() {}, warn() {}, error: (msg, fields) => logged.push({ msg, fields }) };
  deliveryDeadLetters(() => undefined, logger)(letter);
  assert.deepEqual(logged, [
    {
      msg: 'a reply delivery failed for good',
      fields: { runId: 'run-x', hook: 'github', channel: 'telegram', attempts: 5, reason: 'Bad Gateway' },
    },
  ]);
  assert.ok(!JSON.stringify(logged).includes('the reply'), 'the reply text is not logged');
  const recorded: unknown[] = [];
  const withBook = {
    after: { recordFailure: async (input: unknown) => void recorded.push(input) },
  } as unknown as HooksPlugin;
  deliveryDeadLetters(() => withBook, logger)(letter);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(recorded, [letter]);
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
