// Announced waits are capped at hooks.retry.maxDelaySeconds, through the real gateway process: a
// platform's 429 announcing 30 days (past Node's longest timer) or a Retry-After past the dates a
// clock can show, and a model provider's Retry-After of the same, each hold their delivery or run
// for the cap only, then the next try goes out. No timer overflows (Node warns when one does and fires
// it at once, again and again), and no time is turned into an invalid date.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.ts';
import type { Arrival } from '../helpers/fake-channels/fake-platform.ts';
import { channelsConfig, startFakes, type Fakes } from '../helpers/fake-channels/index.ts';
import { slackLimited } from '../helpers/fake-channels/slack.ts';
import { tooManyRequests } from '../helpers/fake-channels/telegram.ts';
import { eventually, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

const CAP_SECONDS = 1;
const THIRTY_DAYS = 30 * 24 * 3600;
/** Seconds that as milliseconds pass the largest time a Date holds (8.64e15 ms). */
const PAST_THE_DATES = '99999999999999';

let fakes: Fakes;
let provider: FakeProvider;
let gw: SpawnedGateway;
/** Prompts the provider refuses once, with a wait of PAST_THE_DATES seconds. */
const limitedOnce = new Set<string>();

before(async () => {
  fakes = await startFakes();
  provider = await startFakeProvider((req, res: ServerResponse) => {
    const content = String(req.body.messages?.[0]?.content ?? '');
    const key = [...limitedOnce].find((k) => content.includes(k));
    if (key !== undefined) {
      limitedOnce.delete(key);
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': PAST_THE_DATES });
      res.end('{"error":{"message":"slow down"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: `answer to ${content.length}` } }] }));
  });
  const dir = await tempStateDir();
  await writeConfig(dir, {
    channels: channelsConfig(fakes),
    hooks: { retry: { attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: CAP_SECONDS } },
    models: { providers: { fake: { baseUrl: provider.baseUrl } } },
    agents: { defaults: { models: ['fake/m', 'echo/echo'] }, list: [{ id: 'main', default: true }] },
  });
  gw = await spawnGateway(dir);
});
after(async () => {
  await gw?.stop();
  await fakes?.close();
  await provider?.close();
});

const textOf = (match: string) => (a: Arrival) => JSON.stringify(a.body ?? '').includes(match);

async function agent(body: Record<string, unknown>): Promise<string> {
  const r = await gw.hook('/hooks/agent', { name: 'Waits', model: 'echo/echo', ...body });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.runId;
}

async function settled(runId: string): Promise<any> {
  return eventually(async () => {
    const { deliveries } = await gw.admin('/api/outbox?limit=1000');
    const d = deliveries.find((e: any) => e.runId === runId);
    return d && ['sent', 'failed'].includes(d.status) && d;
  }, 30_000);
}

/** The wait a retried thing was given: from its failed try to its next. */
/**
 * The next try is due within the cap of when it was scheduled, which was before `seenAt` (when the
 * test saw it retrying): measured from the attempt's own time, a busy host's delay would count too.
 */
const dueWithinCap = (nextAt: string, seenAt: number) => Date.parse(nextAt) <= seenAt + CAP_SECONDS * 1000;

function assertNoOverflow(): void {
  assert.doesNotMatch(gw.output(), /TimeoutOverflowWarning/, 'no timer past 2^31-1 ms');
  assert.doesNotMatch(gw.output(), /Invalid time value/, 'no time past the dates a Date holds');
}

test("a platform's 429 announcing 30 days holds the chat for maxDelaySeconds only, then it is sent", async () => {
  fakes.telegram.scriptLimit(tooManyRequests(THIRTY_DAYS), THIRTY_DAYS * 1000, textOf('thirty days'));
  const runId = await agent({ message: 'thirty days', channel: 'telegram', to: '3030' });
  const retrying = await eventually(async () => {
    const { deliveries } = await gw.admin('/api/outbox?limit=1000');
    const d = deliveries.find((e: any) => e.runId === runId);
    return d?.status === 'retrying' && d;
  }, 30_000);
  assert.ok(dueWithinCap(retrying.nextAttemptAt, Date.now()), retrying.nextAttemptAt);
  const d = await settled(runId);
  assert.equal(d.status, 'sent', JSON.stringify(d));
  const [limited, again] = fakes.telegram.posts(textOf('thirty days'));
  assert.ok(again, 'tried again');
  assert.ok(again.at - limited!.at >= CAP_SECONDS * 1000 - 50, 'not before the cap');
  // The chat is not frozen: another message to it goes too.
  const next = await agent({ message: 'right after', channel: 'telegram', to: '3030' });
  assert.equal((await settled(next)).status, 'sent');
  assertNoOverflow();
});

test('a Retry-After past the dates a clock can show: the delivery is tried again at the cap, not left pending', async () => {
  fakes.slack.scriptLimit(
    { ...slackLimited(1), headers: { 'retry-after': PAST_THE_DATES } },
    Number.MAX_SAFE_INTEGER,
    textOf('past the dates'),
  );
  const runId = await agent({ message: 'past the dates', channel: 'slack', to: 'C777' });
  const d = await settled(runId);
  assert.equal(d.status, 'sent', JSON.stringify(d));
  assert.equal(d.attempts.length, 1);
  assert.match(d.attempts[0].error, /^HTTP 429/);
  assertNoOverflow();
});

test("a model provider's Retry-After past the dates: the run is tried again at the cap", async () => {
  limitedOnce.add('provider says wait');
  const r = await gw.hook('/hooks/agent', {
    name: 'Waits',
    model: 'fake/m',
    message: 'provider says wait',
    deliver: false,
  });
  assert.equal(r.status, 202);
  const retrying = await eventually(async () => {
    const run = await gw.admin(`/api/runs/${r.body.runId}`);
    return run.status === 'retrying' && run;
  }, 30_000);
  assert.ok(dueWithinCap(retrying.nextAttemptAt, Date.now()), retrying.nextAttemptAt);
  const final = await eventually(async () => {
    const run = await gw.admin(`/api/runs/${r.body.runId}`);
    return ['ok', 'error', 'timeout'].includes(run.status) && run;
  }, 30_000);
  assert.equal(final.status, 'ok', JSON.stringify(final));
  assertNoOverflow();
});
