// The reply queue's fallback chain with a host whose sends are scripted per channel: a refusal at a
// first try the run waits for (OpenClaw's firstTryInRun) goes to the next channel instead of being
// the run's error, the receipt follows the chain, and a chain cut by a stop resumes after a restart
// at the delivery it had reached, with the channels still left.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { ChannelName, Delivery, Logger, ReplyEntry, SendResult } from '../../plugin/host.ts';
import { ReplyQueue, type ReplyDeadLetter } from '../../plugin/replies/reply-queue.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { waitUntil } from '../helpers/common.ts';

const quiet: Logger = { info() {}, warn() {}, error() {} };
const sent = (): Promise<SendResult> => Promise.resolve({ status: 'sent', messageIds: ['m1'], sentParts: 1 });
const refused = (): Promise<SendResult> =>
  Promise.resolve({ status: 'failed', retryable: false, description: 'chat not found', messageIds: [], sentParts: 0 });

async function open(
  script: Partial<Record<ChannelName, (d: Delivery, signal: AbortSignal) => Promise<SendResult>>>,
  stateDir?: string,
  firstTryInRun = false,
) {
  const tries: Delivery[] = [];
  const added: ReplyEntry[] = [];
  const letters: ReplyDeadLetter[] = [];
  const fallbacks: string[] = [];
  const queue = await ReplyQueue.open({
    host: {
      logger: quiet,
      replies: {
        send: (d, o) => {
          tries.push(d);
          return script[d.channel]!(d, o.signal);
        },
        defaultTo: (channel) => `default-${channel}`,
        history: { added: async (e) => void added.push(e), changed: async () => {} },
        ...(firstTryInRun ? { firstTryInRun: true } : {}),
      },
    },
    file: stateDir && path.join(stateDir, 'deliveries.jsonl'),
    retry: () => ({ attempts: 1, initialDelaySeconds: 0.05, maxDelaySeconds: 0.2 }),
    metrics: { retryScheduled() {}, replyFallback: (from, to) => void fallbacks.push(`${from}>${to}`) },
  });
  queue.onDeadLetter((l) => void letters.push(l));
  return { queue, tries, added, letters, fallbacks };
}

const reply = { text: 'the build is red', runId: 'run-1', agentId: 'main', hook: 'CI' };

test('a refusal at a first try the run waits for goes to the next channel; the receipt tells the last', async () => {
  const q = await open({ telegram: refused, slack: sent }, undefined, true);
  const receipt = await q.queue.add({
    ...reply,
    channel: 'telegram',
    to: '404',
    fallbacks: [{ channel: 'slack' }],
  });
  assert.deepEqual(await receipt.outcome, { channel: 'slack', to: 'default-slack', status: 'sent' });
  assert.deepEqual(
    q.tries.map((d) => [d.channel, d.to]),
    [
      ['telegram', '404'],
      ['slack', 'default-slack'],
    ],
  );
  assert.equal(q.added[1]!.fallbackOf, q.added[0]!.id, "the fallback's entry names the one it replaces");
  assert.deepEqual(q.letters, []);
  assert.deepEqual(q.fallbacks, ['telegram>slack']);
  await q.queue.close(100);
});

test('a chain cut by a stop resumes at the delivery it reached, with the channels still left', async () => {
  const dir = await tempDir('hookgate-fallbacks-');
  // Slack never answers until the stop aborts it: its delivery stays pending on disk.
  const hang = (_d: Delivery, signal: AbortSignal): Promise<SendResult> =>
    new Promise((resolve) =>
      signal.addEventListener('abort', () =>
        resolve({ status: 'failed', retryable: true, description: 'stopped', messageIds: [], sentParts: 0 }),
      ),
    );
  const first = await open({ telegram: refused, slack: hang }, dir);
  await first.queue.add({
    ...reply,
    channel: 'telegram',
    fallbacks: [{ channel: 'slack', to: 'C1' }, { channel: 'discord' }],
  });
  await waitUntil(() => first.tries.some((d) => d.channel === 'slack'), 'the slack try');
  await first.queue.close(0);

  const second = await open({ telegram: sent, slack: refused, discord: sent }, dir);
  assert.equal(second.queue.resume(), 1, 'the slack delivery is taken up again');
  await waitUntil(() => second.tries.some((d) => d.channel === 'discord'), 'the discord try', 20_000);
  assert.deepEqual(
    second.tries.map((d) => [d.channel, d.to]),
    [
      ['slack', 'C1'],
      ['discord', 'default-discord'],
    ],
    'telegram is not tried again; the chain goes on where it was',
  );
  await waitUntil(() => second.queue.pending === 0, 'the chain settled');
  assert.deepEqual(second.letters, []);
  await second.queue.close(100);
});

test('every channel failed: one dead letter, for the last', async () => {
  const q = await open({ telegram: refused, slack: refused });
  const receipt = await q.queue.add({ ...reply, channel: 'telegram', fallbacks: [{ channel: 'slack' }] });
  assert.deepEqual(await receipt.outcome, { channel: 'slack', to: 'default-slack', status: 'failed' });
  // The receipt settles before the dead letter is told.
  await waitUntil(() => q.letters.length > 0, 'the dead letter');
  await q.queue.close(100);
  assert.equal(q.letters.length, 1);
  assert.equal(q.letters[0]!.channel, 'slack');
});
