// Fallback channels through the real gateway process and two fake platforms (Telegram, Slack): a reply
// whose delivery failed for good (its retries used, or refused) goes to the next channel as an outbox
// entry of its own naming the one it replaces; a failure is recorded only when every channel failed;
// the run's page shows the chain and /metrics counts the fallbacks.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  eventually,
  GATEWAY_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import type { Arrival, Reply } from '../helpers/fake-channels/fake-platform.ts';
import { channelsConfig, startFakes, type Fakes } from '../helpers/fake-channels/index.ts';

let fakes: Fakes;
let gw: SpawnedGateway;

before(async () => {
  fakes = await startFakes();
  const dir = await tempStateDir();
  await writeConfig(dir, {
    channels: channelsConfig(fakes),
    hooks: {
      retry: { attempts: 2, initialDelaySeconds: 0.1, maxDelaySeconds: 1 },
      mappings: [
        {
          id: 'pager',
          match: { path: 'pager' },
          action: 'agent',
          messageTemplate: 'page {{n}}',
          channel: 'telegram',
          to: '404',
          fallbackChannels: [{ channel: 'slack', to: 'C404' }],
        },
      ],
    },
  });
  gw = await spawnGateway(dir);
});
after(async () => {
  await gw?.stop();
  await fakes?.close();
});

const textOf = (match: string) => (a: Arrival) => JSON.stringify(a.body ?? '').includes(match);

/** The run once its reply's deliveries are all settled (sent, failed, recorded): its page and chain. */
async function settledRun(runId: string, count: number): Promise<any> {
  return eventually(async () => {
    const run = await gw.admin(`/api/runs/${runId}`);
    const chain = run.deliveries ?? [];
    return chain.length === count && chain.every((d: any) => ['sent', 'failed', 'recorded'].includes(d.status)) && run;
  }, 60_000);
}

async function fallbackCount(from: string, to: string): Promise<number> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const line = (await res.text())
    .split('\n')
    .find((l) => l.startsWith(`hookgate_reply_fallbacks_total{from="${from}",to="${to}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

test('a reply whose channel failed for good goes to the next one; no failure is recorded', async () => {
  const unavailable: Reply = { status: 503, body: { ok: false, error_code: 503, description: 'Service Unavailable' } };
  // Both tries (hooks.retry.attempts) fail: the Telegram delivery fails for good.
  for (let i = 0; i < 2; i++) fakes.telegram.aimed.push({ match: textOf('first falls'), reply: unavailable });
  const r = await gw.hook('/hooks/agent', {
    message: 'first falls',
    channel: 'telegram',
    to: '777',
    fallbackChannels: [{ channel: 'slack', to: 'C-FALLBACK' }, 'discord'],
  });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const run = await settledRun(r.body.runId, 2);
  const [first, second] = run.deliveries;
  assert.equal(first.channel, 'telegram');
  assert.equal(first.to, '777');
  assert.equal(first.status, 'failed');
  assert.equal(first.attempts.length, 2, 'its retries were used first');
  assert.equal(second.channel, 'slack');
  assert.equal(second.to, 'C-FALLBACK', "the fallback's own to, never the request's");
  assert.equal(second.status, 'sent');
  assert.equal(second.fallbackOf, first.id);
  assert.equal(fakes.slack.arrivals.filter(textOf('first falls')).length, 1);
  assert.equal(fakes.discord.arrivals.filter(textOf('first falls')).length, 0, 'the chain stops once one is sent');
  // Each channel's delivery is its own outbox entry.
  const { deliveries } = await gw.admin('/api/outbox?limit=1000');
  const mine = deliveries.filter((d: any) => d.runId === r.body.runId);
  assert.deepEqual(
    mine.map((d: any) => [d.channel, d.status, d.fallbackOf]),
    [
      ['telegram', 'failed', undefined],
      ['slack', 'sent', first.id],
    ],
  );
  const { failures } = await gw.admin('/api/failures?state=all');
  assert.equal(failures.filter((f: any) => f.runId === r.body.runId).length, 0, 'no failure: the reply arrived');
  assert.equal(await fallbackCount('telegram', 'slack'), 1);
});

test("a mapping's fallbacks: a failure is recorded once, for the last channel, when every channel failed", async () => {
  const r = await gw.hook('/hooks/pager', { n: 'all refuse' });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const run = await settledRun(r.body.runId, 2);
  const [first, second] = run.deliveries;
  assert.deepEqual([first.channel, first.to, first.status], ['telegram', '404', 'failed']);
  assert.deepEqual([second.channel, second.to, second.status], ['slack', 'C404', 'failed']);
  assert.equal(second.fallbackOf, first.id);
  const failures = await eventually(async () => {
    const page = await gw.admin('/api/failures?state=all');
    const own = page.failures.filter((f: any) => f.runId === r.body.runId);
    return own.length > 0 && own;
  }, 60_000);
  assert.equal(failures.length, 1);
  assert.equal(failures[0].kind, 'delivery');
  assert.match(failures[0].lastError, /channel_not_found/);
});

test('a fallback channel the gateway does not have is refused: 400 naming it', async () => {
  const r = await gw.hook('/hooks/agent', { message: 'x', fallbackChannels: ['nochannel'] });
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'invalid_payload');
});
