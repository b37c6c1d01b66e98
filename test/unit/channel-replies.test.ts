// The reply queue with the standalone gateway's channel senders and a real outbox, against the fake
// platforms (real loopback servers): the receipt's outcome settles after the last try, the outbox
// shows each state, and a dead letter is told once, with the shape the failure book records.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { resolveChannels } from '../../channels/index.ts';
import { ChannelReplies } from '../../plugin/hosts/standalone/server/channel-replies.ts';
import { gatewayMetrics } from '../../plugin/hosts/standalone/server/gateway-metrics.ts';
import { Outbox } from '../../plugin/hosts/standalone/storage/outbox.ts';
import { ReplyQueue, type QueuedReply, type ReplyDeadLetter } from '../../plugin/replies/reply-queue.ts';
import { channelsConfig, startFakes, type Fakes } from '../helpers/fake-channels/index.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { waitUntil } from '../helpers/common.ts';

const quiet = { info() {}, warn() {}, error() {} };
let fakes: Fakes;
let outbox: Outbox;
let deliveries: ReplyQueue;
const failures: ReplyDeadLetter[] = [];
let retried = 0;

before(async () => {
  fakes = await startFakes();
  const problems: string[] = [];
  const { telegram, slack } = channelsConfig(fakes) as Record<string, never>;
  const channels = resolveChannels({ telegram, slack }, '/', problems);
  assert.deepEqual(problems, []);
  outbox = new Outbox(path.join(await tempDir('deliveries-'), 'outbox.jsonl'), quiet);
  const metrics = gatewayMetrics(undefined, { outboxSize: () => 0, deliveriesPending: () => 0 });
  const replies = new ChannelReplies({ outbox, metrics: () => metrics, channels, defaultTo: () => undefined });
  deliveries = await ReplyQueue.open({
    host: { logger: quiet, replies },
    file: path.join(await tempDir('deliveries-state-'), 'deliveries.jsonl'),
    retry: () => ({ attempts: 2, initialDelaySeconds: 0.1, maxDelaySeconds: 0.1 }),
    metrics: { retryScheduled: () => void retried++ },
  });
  deliveries.onDeadLetter((f) => void failures.push(f));
});
after(async () => {
  await deliveries.close(100);
  await outbox.close();
  await fakes.close();
});

const reply = (text: string, channel: 'telegram' | 'slack' | 'signal', to?: string): QueuedReply => ({
  channel,
  ...(to !== undefined ? { to } : {}),
  text,
  runId: `run-${text}`,
  agentId: 'main',
  hook: `hook-${text}`,
});

test('the receipt settles sent after the send, recorded for a channel without credentials', async () => {
  const sent = await deliveries.add(reply('receipt sent', 'telegram', '11'));
  assert.deepEqual(await sent.outcome, { channel: 'telegram', to: '11', status: 'sent' });
  const recorded = await deliveries.add(reply('receipt recorded', 'signal', '+1555'));
  assert.deepEqual(await recorded.outcome, { channel: 'signal', to: '+1555', status: 'recorded' });
  assert.deepEqual(failures, []);
});

test('the receipt settles only after the retry: sent on the second try', async () => {
  fakes.slack.aimed.push({
    match: (a) => a.body?.text === 'second time lucky',
    reply: { status: 500, body: 'internal_error' },
  });
  const before = retried;
  const r = await deliveries.add(reply('second time lucky', 'slack', 'C1'));
  assert.equal((await r.outcome).status, 'sent');
  assert.equal(retried, before + 1);
  assert.equal(fakes.slack.posts((a) => a.body?.text === 'second time lucky').length, 2);
});

test('attempts used up: failed, and the dead letter is told once with every fact', async () => {
  for (let i = 0; i < 2; i++)
    fakes.telegram.aimed.push({
      match: (a) => a.body?.text === 'down for good',
      reply: { status: 502, body: { ok: false, error_code: 502, description: 'Bad Gateway' } },
    });
  const r = await deliveries.add(reply('down for good', 'telegram', '12'));
  assert.deepEqual(await r.outcome, { channel: 'telegram', to: '12', status: 'failed' });
  await waitUntil(() => failures.length === 1, 'the dead letter');
  const [f] = failures;
  assert.deepEqual(
    { ...f, firstAt: typeof f!.firstAt, lastAt: typeof f!.lastAt },
    {
      kind: 'delivery',
      runId: 'run-down for good',
      hook: 'hook-down for good',
      agentId: 'main',
      channel: 'telegram',
      to: '12',
      attempts: 2,
      lastError: 'HTTP 502: Bad Gateway',
      text: 'down for good',
      firstAt: 'string',
      lastAt: 'string',
    },
  );
  assert.ok(Date.parse(f!.lastAt) >= Date.parse(f!.firstAt));
  const entry = (await outbox.list()).find((d) => d.runId === 'run-down for good')!;
  assert.equal(entry.status, 'failed');
  assert.equal(entry.attempts?.length, 2);
});

test('a refusal is a dead letter after one try', async () => {
  const r = await deliveries.add(reply('nobody there', 'telegram', '404'));
  assert.equal((await r.outcome).status, 'failed');
  await waitUntil(() => failures.length === 2, 'the second dead letter');
  assert.equal(failures[1]!.attempts, 1);
  assert.equal(failures[1]!.lastError, 'HTTP 400: Bad Request: chat not found');
});

test('a resume leaves alone what this process accepted: nothing is sent twice', async () => {
  const first = await deliveries.add(reply('mine one', 'telegram', '13'));
  const second = await deliveries.add(reply('mine two', 'telegram', '13'));
  // The second waits for its turn (one a second per chat): it is still unsettled.
  assert.ok(deliveries.pending >= 1);
  assert.equal(deliveries.resume(), 0);
  assert.equal((await first.outcome).status, 'sent');
  assert.equal((await second.outcome).status, 'sent');
  assert.equal(fakes.telegram.posts((a) => a.body?.chat_id === '13').length, 2);
});
