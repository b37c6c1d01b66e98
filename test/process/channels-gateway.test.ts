// The real gateway process delivering agent replies through every channel to its fake platform:
// sent with the platform's ids, split in order, refused at once with the platform's words, visible
// in the outbox, the log and /metrics, and never showing a secret. Then `hookgate channels`.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  eventually,
  spawnGateway,
  tempStateDir,
  writeConfig,
  GATEWAY_TOKEN,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { runCli } from '../helpers/gmail-run.ts';
import { discordLimited } from '../helpers/fake-channels/discord.ts';
import { assertNoSecret, channelsConfig, SECRETS, startFakes, type Fakes } from '../helpers/fake-channels/index.ts';

const CHANNELS = ['telegram', 'slack', 'discord', 'mattermost', 'msteams', 'signal', 'whatsapp', 'imessage'] as const;

let fakes: Fakes;
let gw: SpawnedGateway;
let configPath: string;

before(async () => {
  fakes = await startFakes();
  const dir = await tempStateDir();
  configPath = await writeConfig(dir, {
    channels: channelsConfig(fakes),
    // A short backoff; a cap above the platforms' announced waits (1.2 s), which are honoured up to it.
    hooks: { retry: { attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 5 } },
  });
  gw = await spawnGateway(dir);
});
after(async () => {
  await gw?.stop();
  await fakes?.close();
});

async function deliveryOf(runId: string): Promise<any> {
  return eventually(async () => {
    const { deliveries } = await gw.admin('/api/outbox?limit=1000');
    const d = deliveries.find((e: any) => e.runId === runId);
    return d && d.status !== 'pending' && d.status !== 'retrying' && d;
  }, 20_000);
}

test('an agent reply goes out through each channel to its platform, with the message ids in the outbox', async () => {
  const runs = await Promise.all(
    CHANNELS.map(async (channel) => {
      const r = await gw.hook('/hooks/agent', { message: `Build 42 passed (${channel})`, name: 'CI', channel });
      assert.equal(r.status, 202);
      return r.body.runId as string;
    }),
  );
  for (const [i, channel] of CHANNELS.entries()) {
    const d = await deliveryOf(runs[i]!);
    assert.equal(d.channel, channel);
    assert.equal(d.status, 'sent', JSON.stringify(d));
    assert.equal(Array.isArray(d.messageIds), true);
    if (channel !== 'msteams' && channel !== 'slack') assert.equal(d.messageIds.length, 1, channel);
    const fake = fakes[channel];
    assert.ok(
      fake.arrivals.some((a) => JSON.stringify(a.body ?? '').includes(`Build 42 passed (${channel})`)),
      `${channel}: the reply reached the platform`,
    );
  }
  assert.equal((await gw.admin(`/api/runs/${runs[0]}`)).status, 'ok');
});

test('a long reply is split at the platform limit, parts sent in order', async () => {
  const paragraphs = Array.from(
    { length: 40 },
    (_, i) => `Step ${String(i).padStart(2, '0')}: ${'done '.repeat(60).trim()}`,
  );
  const r = await gw.hook('/hooks/agent', {
    message: paragraphs.join('\n\n'),
    name: 'Long',
    channel: 'telegram',
    to: '7007',
  });
  const d = await deliveryOf(r.body.runId);
  assert.equal(d.status, 'sent');
  const parts = fakes.telegram.arrivals.filter((a) => a.body?.chat_id === '7007').map((a) => a.body.text as string);
  assert.ok(parts.length >= 3, `${parts.length} parts`);
  assert.equal(d.messageIds.length, parts.length);
  for (const p of parts) assert.ok([...p].length <= 4096);
  const steps = parts.join('\n').match(/Step \d\d/g)!;
  assert.deepEqual(
    steps,
    paragraphs.map((p) => p.slice(0, 7)),
    'every step, in order, none cut in two',
  );
  assert.equal(fakes.telegram.unprovoked429, 0, 'paced: one part a second to the chat');
});

test('a burst of replies to one chat is paced: all arrive, in order, none refused with a 429', async () => {
  const texts = Array.from({ length: 5 }, (_, i) => `burst number ${i}`);
  const runs: string[] = [];
  // One after the other, so the runs (and their deliveries) start in this order.
  for (const message of texts)
    runs.push((await gw.hook('/hooks/agent', { message, name: 'Burst', channel: 'slack', to: 'C777' })).body.runId);
  for (const runId of runs) assert.equal((await deliveryOf(runId)).status, 'sent');
  const arrived = fakes.slack.arrivals
    .filter((a) => a.body?.channel === 'C777')
    .map((a) => /burst number \d/.exec(a.body.text)![0]);
  assert.deepEqual(arrived, texts);
  assert.equal(fakes.slack.unprovoked429, 0);
});

test('a 429 with an announced wait: the next request comes no earlier, by the platform clock', async () => {
  fakes.discord.scriptLimit(discordLimited(1.2), 1200);
  const r = await gw.hook('/hooks/agent', { message: 'wait for it', name: 'Wait', channel: 'discord' });
  assert.equal((await deliveryOf(r.body.runId)).status, 'sent');
  const tries = fakes.discord.arrivals.filter((a) => a.body?.content?.includes('wait for it'));
  assert.equal(tries.length, 2);
  assert.ok(tries[1]!.at >= fakes.discord.limited[0]!.at + 1200);
});

test('a refusal fails the delivery at once, with the platform description, in the outbox and the log', async () => {
  const before = fakes.telegram.arrivals.length;
  const r = await gw.hook('/hooks/agent', { message: 'to nowhere', name: 'Lost', channel: 'telegram', to: '404' });
  const d = await deliveryOf(r.body.runId);
  assert.equal(d.status, 'failed');
  assert.equal(d.error, 'HTTP 400: Bad Request: chat not found');
  assert.equal(fakes.telegram.arrivals.length - before, 1);
  await eventually(async () => /delivery failed for good/.test(gw.output()));
  const line = gw
    .output()
    .split('\n')
    .find((l) => l.includes('delivery failed for good'))!;
  assert.match(line, /chat not found/);
  assert.doesNotMatch(line, /to nowhere/, 'the log never carries the text');
});

test('a platform echoing its URL: the token is removed everywhere', async () => {
  fakes.telegram.scripted.push({
    status: 400,
    body: { ok: false, error_code: 400, description: `Bad Request: wrong path /bot${SECRETS.telegram}/sendMessage` },
  });
  const r = await gw.hook('/hooks/agent', { message: 'echo the url', name: 'Echo', channel: 'telegram', to: '8008' });
  const d = await deliveryOf(r.body.runId);
  assert.equal(d.error, 'HTTP 400: Bad Request: wrong path /bot[redacted]/sendMessage');
});

test('metrics: deliveries by channel and outcome, delivery latency, pending count', async () => {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const text = await res.text();
  assert.match(text, /hookgate_deliveries_total\{channel="telegram",outcome="sent"\} [1-9]/);
  assert.match(text, /hookgate_deliveries_total\{channel="telegram",outcome="failed"\} [1-9]/);
  assert.match(text, /hookgate_deliveries_total\{channel="msteams",outcome="sent"\} 1/);
  assert.match(text, /hookgate_delivery_duration_seconds_count\{channel="slack"\} [1-9]/);
  assert.match(text, /hookgate_deliveries_pending 0/);
  assertNoSecret(text, '/metrics');
});

test('hookgate channels check and send against the platforms', async () => {
  const check = await runCli(['channels', 'check', '--config', configPath]);
  assert.equal(check.code, 0, check.out);
  for (const channel of CHANNELS) assert.match(check.out, new RegExp(`^${channel}\\s+(ok|unchecked)\\s+\\S`, 'm'));
  assert.match(check.out, /^telegram\s+ok\s+bot @hooks_bot$/m);
  assert.match(check.out, /^msteams\s+unchecked\s+Workflows webhook: cannot be checked without posting/m);

  const send = await runCli(['channels', 'send', 'telegram', '--to', '9009', '--config', configPath, 'hello', 'there']);
  assert.equal(send.code, 0, send.out);
  assert.match(send.out, /^sent to telegram in 1 part: \d+$/m);
  assert.equal(fakes.telegram.arrivals.at(-1)!.body.text, 'hello there');

  const refused = await runCli(['channels', 'send', 'slack', '--to', 'C404', '--config', configPath, 'hi']);
  assert.equal(refused.code, 1);
  assert.match(refused.out, /hookgate: slack: Slack: channel_not_found/);

  const wrongDir = await tempStateDir();
  const wrongConfig = await writeConfig(wrongDir, {
    channels: channelsConfig(fakes, {
      telegram: { botToken: `${SECRETS.telegram}x` },
      discord: { webhookUrl: `${fakes.discord.url}/api/webhooks/1/${SECRETS.discordWebhookToken}` },
    }),
  });
  const failed = await runCli(['channels', 'check', '--config', wrongConfig]);
  assert.equal(failed.code, 1);
  assert.match(failed.out, /^telegram\s+FAILED\s+HTTP 401: Unauthorized$/m);
  assert.match(failed.out, /^discord\s+FAILED\s+HTTP 401: Invalid Webhook Token \(code 50027\)$/m);
  assert.match(failed.out, /^slack\s+ok/m);
  for (const out of [check.out, send.out, refused.out, failed.out]) assertNoSecret(out, 'CLI output');
});

test('no secret in the log, the outbox, the runs or the requests log', async () => {
  assertNoSecret(gw.output(), 'the gateway log');
  const { deliveries } = await gw.admin('/api/outbox?limit=1000');
  assertNoSecret(JSON.stringify(deliveries), 'the outbox');
  assertNoSecret(JSON.stringify(await gw.admin('/api/requests')), 'the request log');
});
