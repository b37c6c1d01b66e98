// Delivery retries through the real gateway process and the fake platforms (hooks.retry): a 5xx is
// tried again and shows `retrying` in the outbox meanwhile, a split reply resumes at the part that
// failed, each platform's 429 wait is honoured by its own clock, a refusal fails at once, and a
// delivery that used its attempts is a dead letter with every try listed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { discordLimited } from '../helpers/fake-channels/discord.ts';
import type { Arrival, Reply } from '../helpers/fake-channels/fake-platform.ts';
import { assertNoSecret, channelsConfig, SECRETS, startFakes, type Fakes } from '../helpers/fake-channels/index.ts';
import { slackLimited } from '../helpers/fake-channels/slack.ts';
import { tooManyRequests } from '../helpers/fake-channels/telegram.ts';

const ATTEMPTS = 3;
let fakes: Fakes;
let gw: SpawnedGateway;

before(async () => {
  fakes = await startFakes();
  const dir = await tempStateDir();
  await writeConfig(dir, {
    channels: channelsConfig(fakes),
    // The backoff stays short (0.1 s, then 0.2 s); the cap lets the platforms' announced waits (1-2 s) hold.
    hooks: { retry: { attempts: ATTEMPTS, initialDelaySeconds: 0.1, maxDelaySeconds: 5 } },
  });
  gw = await spawnGateway(dir);
});
after(async () => {
  await gw?.stop();
  await fakes?.close();
});

async function delivery(runId: string, done = true): Promise<any> {
  return eventually(async () => {
    const { deliveries } = await gw.admin('/api/outbox?limit=1000');
    const d = deliveries.find((e: any) => e.runId === runId);
    return d && (!done || ['sent', 'failed'].includes(d.status)) && d;
  }, 20_000);
}

async function agent(body: Record<string, unknown>): Promise<string> {
  const r = await gw.hook('/hooks/agent', { name: 'Retry', ...body });
  assert.equal(r.status, 202);
  return r.body.runId;
}

const textOf = (match: string) => (a: Arrival) => JSON.stringify(a.body ?? '').includes(match);

test('a 5xx is tried again: retrying in the outbox with the attempt, then sent with the message id', async () => {
  const unavailable: Reply = {
    status: 503,
    headers: { 'retry-after': '2' },
    body: { ok: false, error_code: 503, description: 'Service Unavailable' },
  };
  fakes.telegram.aimed.push({ match: textOf('five hundred'), reply: unavailable });
  const runId = await agent({ message: 'five hundred', channel: 'telegram', to: '5005' });
  const retrying = await eventually(async () => {
    const d = await delivery(runId, false);
    return d.status === 'retrying' && d;
  });
  assert.equal(retrying.attempts.length, 1);
  assert.equal(retrying.attempts[0].error, 'HTTP 503: Service Unavailable');
  // The 503's Retry-After is longer than the backoff: it sets the time.
  assert.ok(Date.parse(retrying.nextAttemptAt) - Date.parse(retrying.attempts[0].at) >= 2000);
  const sent = await delivery(runId);
  assert.equal(sent.status, 'sent');
  assert.equal(sent.messageIds.length, 1);
  assert.equal(sent.attempts.length, 1, 'the failed try stays listed');
  const tries = fakes.telegram.posts(textOf('five hundred'));
  assert.equal(tries.length, 2);
  assert.ok(tries[1]!.at - tries[0]!.at >= 2000);
});

test('a split reply resumes at the part that failed: no part is sent twice', async () => {
  const parts = ['alpha', 'bravo', 'charlie'].map((w) => `${w} ${'x'.repeat(1500)}`);
  const word = (a: Arrival): string | undefined => /\b(alpha|bravo|charlie) x/.exec(a.body?.content ?? '')?.[1];
  fakes.discord.aimed.push({
    match: (a) => word(a) === 'bravo',
    reply: { status: 502, body: { message: '502: Bad Gateway', code: 0 } },
  });
  const runId = await agent({ message: parts.join('\n\n'), channel: 'discord' });
  const d = await delivery(runId);
  assert.equal(d.status, 'sent', JSON.stringify(d));
  assert.equal(d.messageIds.length, 3);
  assert.equal(new Set(d.messageIds).size, 3);
  const words = fakes.discord.posts((a) => word(a) !== undefined).map(word);
  assert.deepEqual(words, ['alpha', 'bravo', 'bravo', 'charlie'], 'alpha once, bravo again after its 502');
});

test("each platform's 429 wait is honoured: the next try comes no earlier, by the platform's clock", async () => {
  const cases = [
    // Telegram: parameters.retry_after in the body.
    { channel: 'telegram', reply: tooManyRequests(1), waitMs: 1000 },
    // Discord: retry_after (seconds, fractional) in the body; Retry-After rounds it up.
    { channel: 'discord', reply: discordLimited(1.3), waitMs: 1300 },
    // Slack: the Retry-After header.
    { channel: 'slack', reply: slackLimited(1), waitMs: 1000 },
  ] as const;
  const runs = await Promise.all(
    cases.map(async ({ channel, reply, waitMs }) => {
      const message = `limited on ${channel}`;
      fakes[channel].scriptLimit(reply, waitMs, textOf(message));
      return { channel, waitMs, message, runId: await agent({ message, channel }) };
    }),
  );
  for (const { channel, waitMs, message, runId } of runs) {
    const d = await delivery(runId);
    assert.equal(d.status, 'sent', channel);
    assert.equal(d.attempts.length, 1, channel);
    assert.match(d.attempts[0].error, /^HTTP 429/, channel);
    const [limited, again] = fakes[channel].posts(textOf(message));
    assert.ok(again, `${channel}: tried again`);
    assert.ok(again.at - limited!.at >= waitMs, `${channel}: ${again.at - limited!.at} ms after the 429`);
  }
});

test('a refusal fails at once with the platform description, one try, no secret', async () => {
  fakes.telegram.aimed.push({
    match: textOf('refused for good'),
    reply: {
      status: 403,
      body: { ok: false, error_code: 403, description: `Forbidden: bot was blocked by the user (${SECRETS.telegram})` },
    },
  });
  const runId = await agent({ message: 'refused for good', channel: 'telegram', to: '6006' });
  const d = await delivery(runId);
  assert.equal(d.status, 'failed');
  assert.equal(d.error, 'HTTP 403: Forbidden: bot was blocked by the user ([redacted])');
  assert.equal(d.attempts.length, 1);
  assert.equal(d.nextAttemptAt, undefined);
  assert.equal(fakes.telegram.posts(textOf('refused for good')).length, 1);
  assertNoSecret(JSON.stringify(d), 'the outbox');
});

test('a delivery that used its attempts is failed: every try listed, the last error kept', async () => {
  for (let i = 0; i < ATTEMPTS; i++)
    fakes.mattermost.aimed.push({
      match: textOf('never gets through'),
      reply: { status: 500, body: { id: 'api.post.create_post.error', message: `Internal error ${i + 1}` } },
    });
  const runId = await agent({ message: 'never gets through', channel: 'mattermost' });
  const d = await delivery(runId);
  assert.equal(d.status, 'failed');
  assert.equal(d.attempts.length, ATTEMPTS);
  assert.match(d.error, /Internal error 3/);
  assert.equal(fakes.mattermost.posts(textOf('never gets through')).length, ATTEMPTS);
  await eventually(async () => gw.output().includes('"attempts":3'));
});

test('metrics: retrying and failed outcomes, hookgate_retries_total{kind="delivery"}, nothing pending', async () => {
  const text = await (
    await fetch(`${gw.url}/metrics`, { headers: { authorization: 'Bearer spawned-gateway-token-0123456789' } })
  ).text();
  assert.match(text, /hookgate_deliveries_total\{channel="telegram",outcome="retrying"\} [1-9]/);
  assert.match(text, /hookgate_deliveries_total\{channel="mattermost",outcome="retrying"\} 2/);
  assert.match(text, /hookgate_deliveries_total\{channel="mattermost",outcome="failed"\} 1/);
  assert.match(text, /hookgate_retries_total\{kind="delivery"\} [1-9]/);
  assert.match(text, /hookgate_deliveries_pending 0/);
  assertNoSecret(gw.output(), 'the gateway log');
});
