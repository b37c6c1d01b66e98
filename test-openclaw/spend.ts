// What a hook may spend, inside a real OpenClaw with the installed package (issue 45): a run budget
// whose overflow is digested (one main-session event per window, the runs past it never reach the
// model) or refused (429), a burst coalesced into one run, a one-off hook session deleted after
// hooks.sessionRetention (a named one kept), a reply falling back to another chat when its own fails
// for good, and hooks.endpoints.agent.acceptedStatus 200. One gateway for all of them, with a fake
// model and OpenClaw's own Telegram channel pointed at a fake Bot API. Registered by run.ts; alone:
// `node --import tsx --test test-openclaw/spend.ts`.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import {
  ensureInstalled,
  type GatewayFiles,
  type HooksBlock,
  installPlugin,
  prepareFiles,
  type RunningGateway,
  startGateway,
  stopModelGateway,
  withFakeModel,
} from './openclaw-env.ts';
import {
  startFakeProvider,
  streamReply,
  type FakeProvider,
  type ProviderRequest,
} from '../test/helpers/fake-provider.ts';
import { type Arrival, FakePlatform } from '../test/helpers/fake-channels/fake-platform.ts';
import { botApi } from './fake-bot-api.ts';

const nonce = Math.random().toString(36).slice(2, 8);
const BOT_TOKEN = `987654322:AAspend-${nonce}-abcdefghijklmnopqrstu`;
const REPLY = `spent ${nonce}`;
/** The chat whose every send the platform answers 500, and the one that works. */
const BROKEN_CHAT = '2003';
const FALLBACK_CHAT = '2004';
/** The digest budget's window: long enough for three requests to land in one, short for the test. */
const WINDOW_SECONDS = 20;
/** The coalesce window: the burst's requests are posted well within it. */
const BURST_SECONDS = 8;
/** Long enough to see the one-off session before it goes (each sessions.list is a CLI start). */
const RETENTION_SECONDS = 45;

const HOOKS: HooksBlock = {
  enabled: true,
  token: `hook-spend-${nonce}-0123456789`,
  path: '/hooks',
  allowRequestSessionKey: true,
  allowedSessionKeyPrefixes: ['hook:'],
  // A failed send is tried once more, 1 s later: the first chat fails for good within seconds.
  retry: { attempts: 2, initialDelaySeconds: 1, maxDelaySeconds: 1 },
  sessionRetention: { seconds: RETENTION_SECONDS },
  endpoints: { agent: { acceptedStatus: 200 } },
  mappings: [
    {
      id: 'spend',
      match: { path: 'spend' },
      action: 'agent',
      messageTemplate: 'spend {{n}}',
      deliver: false,
      wakeMode: 'next-heartbeat',
      sessionKey: 'hook:spend',
      budget: { runs: 1, perSeconds: WINDOW_SECONDS, overflow: 'digest' },
    },
    {
      id: 'strict',
      match: { path: 'strict' },
      action: 'agent',
      messageTemplate: 'strict {{n}}',
      deliver: false,
      wakeMode: 'next-heartbeat',
      sessionKey: 'hook:strict',
      budget: { runs: 1, perSeconds: 600, overflow: 'refuse' },
    },
    {
      id: 'burst',
      match: { path: 'burst' },
      action: 'agent',
      messageTemplate: 'burst {{n}}',
      deliver: false,
      wakeMode: 'next-heartbeat',
      sessionKey: 'hook:burst',
      coalesce: { seconds: BURST_SECONDS, maxItems: 10 },
    },
  ],
};

/**
 * What a model request's turn was asked: its user messages after the last assistant message (the
 * history before it belongs to earlier turns). OpenClaw puts queued system events in a block of its
 * own context and may add such a block as a message of its own, so the whole of them is read.
 */
function lastUserText(req: ProviderRequest): string {
  const messages = (req.body.messages ?? []) as { role: string; content: unknown }[];
  const lastAnswer = messages.map((m) => m.role).lastIndexOf('assistant');
  return messages
    .slice(lastAnswer + 1)
    .filter((m) => m.role === 'user')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
}

/** Heartbeats (the digest asks for one) are answered HEARTBEAT_OK, so OpenClaw sends nothing on. */
function answerAsModel(req: ProviderRequest, res: ServerResponse): void {
  const asked = lastUserText(req);
  streamReply(res, /heartbeat|over its budget/i.test(asked) ? 'HEARTBEAT_OK' : REPLY);
}

let files: GatewayFiles;
let gw: RunningGateway;
let model: FakeProvider;
let telegram: FakePlatform;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function send(pathname: string, opts: { token?: string; method?: string; body?: unknown } = {}): Promise<Answer> {
  const res = await fetch(`${gw.url}${pathname}`, {
    method: opts.method ?? 'GET',
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, text, json };
}

const hook = (pathname: string, body: unknown): Promise<Answer> =>
  send(pathname, { method: 'POST', token: HOOKS.token, body });

const admin = (rest: string): Promise<Answer> => send(`/hookgate/api/${rest}`, { token: files.gatewayToken });

const queued = async (): Promise<string[]> =>
  ((await gw.call('status')).queuedSystemEvents as string[] | undefined) ?? [];

/** The model requests that carry `text` anywhere in what they were sent. */
const modelCallsWith = (text: string): ProviderRequest[] =>
  model.requests.filter((r) => JSON.stringify(r.body.messages ?? '').includes(text));

/**
 * Where a main-session event with `text` was seen: queued in OpenClaw, or read by a turn (the digest's
 * heartbeat takes it in, and the turn that read it is the model request whose last user message has it).
 */
async function sightings(text: string): Promise<number> {
  const inQueue = (await queued()).filter((e) => e.includes(text)).length;
  const read = model.requests.filter((r) => lastUserText(r).includes(text)).length;
  return inQueue + read;
}

/** The run's page once its status is final. */
const finished = (runId: string): Promise<any> =>
  gw.until(`run ${runId} finished`, 180_000, async () => {
    const r = await admin(`runs/${runId}`);
    return ['ok', 'error', 'timeout'].includes(r.json?.status) ? r.json : undefined;
  });

const sessionKeys = async (): Promise<string[]> =>
  (((await gw.call('sessions.list')).sessions as { key?: string }[] | undefined) ?? []).map((s) => s.key ?? '');

describe('what a hook may spend, inside OpenClaw', { timeout: 12 * 60_000 }, () => {
  before(
    async () => {
      await ensureInstalled();
      telegram = await new FakePlatform(botApi(BOT_TOKEN, BROKEN_CHAT)).start();
      model = await startFakeProvider(answerAsModel);
      files = await prepareFiles();
      await installPlugin(files);
      gw = await startGateway(files, HOOKS, (config) => {
        const shaped = withFakeModel(config, model.baseUrl) as { plugins: Record<string, unknown> };
        return {
          ...shaped,
          plugins: { ...shaped.plugins, allow: ['hookgate', 'telegram'] },
          channels: { telegram: { enabled: true, botToken: BOT_TOKEN, apiRoot: telegram.url } },
        };
      });
      // A busy machine may take minutes to start OpenClaw.
      await gw.waitForLine(/hookgate ready/, 300_000);
    },
    { timeout: 8 * 60_000 },
  );

  after(async () => {
    await stopModelGateway({ files, gw, model });
    await telegram?.close();
  });

  test('acceptedStatus 200: /hooks/agent answers an accepted run 200 with the same body', async () => {
    const r = await hook('/hooks/agent', {
      message: `plain ${nonce}`,
      deliver: false,
      sessionKey: `hook:plain-${nonce}`,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.ok, true);
    assert.match(String(r.json.runId), /^[0-9a-f-]{36}$/);
    assert.equal((await finished(r.json.runId)).status, 'ok');
  });

  test('a run budget with overflow digest: the runs past it never reach the model, one digest per window', async () => {
    const first = await hook('/hooks/spend', { n: `in-0-${nonce}` });
    assert.equal(first.status, 202, first.text);
    assert.ok(first.json.runId, first.text);
    const over = [`over-1-${nonce}`, `over-2-${nonce}`];
    for (const n of over) {
      const r = await hook('/hooks/spend', { n });
      assert.equal(r.status, 202, r.text);
      assert.deepEqual([r.json.ok, r.json.digested, r.json.runId], [true, true, undefined], r.text);
    }
    assert.equal((await finished(first.json.runId)).status, 'ok');
    const header = 'Hook spend: 2 events over its budget';
    await gw.until('the first window’s digest', 120_000, async () => ((await sightings(header)) ? true : undefined));
    // Its window has ended (the digest is told then): the next request runs, the one after is digested.
    const next = await hook('/hooks/spend', { n: `in-3-${nonce}` });
    assert.equal(next.status, 202, next.text);
    assert.ok(next.json.runId, next.text);
    const late = await hook('/hooks/spend', { n: `over-4-${nonce}` });
    assert.equal(late.json?.digested, true, late.text);
    assert.equal((await finished(next.json.runId)).status, 'ok');
    const secondHeader = 'Hook spend: 1 events over its budget';
    await gw.until('the second window’s digest', 120_000, async () =>
      (await sightings(secondHeader)) ? true : undefined,
    );
    assert.equal(await sightings(header), 1, 'the first window’s digest was told once');
    assert.equal(await sightings(secondHeader), 1, 'the second window’s digest was told once');
    for (const n of [...over, `over-4-${nonce}`]) {
      const calls = modelCallsWith(`spend ${n}`);
      assert.ok(calls.length > 0, `${n} is listed in a digest the model read`);
      // Only as a digest's line, wrapped as untrusted content, never as a run's own prompt.
      for (const call of calls) assert.match(JSON.stringify(call.body.messages ?? ''), /events over its budget/);
    }
    assert.ok(modelCallsWith(`spend in-0-${nonce}`).length >= 1, 'the run within the budget reached the model');
    const spent = await admin('hooks');
    const use = spent.json.hooks.find((h: { name: string }) => h.name === 'spend');
    assert.equal(use.budgets[0].limitRuns, 1, spent.text);
  });

  test('a run budget with overflow refuse: 429 budget_exhausted with Retry-After', async () => {
    const first = await hook('/hooks/strict', { n: `strict-0-${nonce}` });
    assert.equal(first.status, 202, first.text);
    const refused = await hook('/hooks/strict', { n: `strict-1-${nonce}` });
    assert.equal(refused.status, 429, refused.text);
    assert.deepEqual([refused.json.ok, refused.json.code], [false, 'budget_exhausted']);
    const wait = Number(refused.headers.get('retry-after'));
    assert.ok(wait > 0 && wait <= 600, `Retry-After: ${refused.headers.get('retry-after')}`);
    assert.equal((await finished(first.json.runId)).status, 'ok');
    assert.equal(modelCallsWith(`strict strict-1-${nonce}`).length, 0, 'the refused request never reached the model');
  });

  test('coalesce: a burst is one run, one model call with every message in arrival order', async () => {
    const items = [0, 1, 2].map((i) => `burst-${i}-${nonce}`);
    const answers: Answer[] = [];
    for (const n of items) answers.push(await hook('/hooks/burst', { n }));
    for (const r of answers) {
      assert.equal(r.status, 202, r.text);
      assert.equal(r.json.coalesced, true, r.text);
    }
    const runId = answers[0]!.json.runId as string;
    assert.ok(
      answers.every((r) => r.json.runId === runId),
      'every request answered with the batch’s run id',
    );
    assert.equal((await finished(runId)).status, 'ok');
    const calls = model.requests.filter((r) => items.some((n) => lastUserText(r).includes(n)));
    assert.equal(calls.length, 1, 'one model call for the burst');
    const prompt = lastUserText(calls[0]!);
    const at = items.map((n) => prompt.indexOf(`burst ${n}`));
    assert.ok(
      at.every((p) => p >= 0),
      `every message in the prompt: ${prompt.slice(0, 2000)}`,
    );
    assert.deepEqual(
      [...at].sort((a, b) => a - b),
      at,
      'in arrival order',
    );
  });

  test('sessionRetention: a one-off hook:<uuid> session is deleted after the retention, a named one kept', async () => {
    const named = `hook:kept-${nonce}`;
    const keep = await hook('/hooks/agent', { message: `named ${nonce}`, deliver: false, sessionKey: named });
    assert.equal(keep.status, 200, keep.text);
    const oneOff = await hook('/hooks/agent', { message: `one-off ${nonce}`, deliver: false });
    assert.equal(oneOff.status, 200, oneOff.text);
    const [keptRun, oneOffRun] = [await finished(keep.json.runId), await finished(oneOff.json.runId)];
    assert.equal(oneOffRun.status, 'ok');
    const key = oneOffRun.sessionKey as string;
    assert.match(key, /^agent:main:hook:[0-9a-f-]{36}$/);
    const keptKey = keptRun.sessionKey as string;
    // Each sessions.list is a CLI start that a busy machine may fail: asked again until it answers.
    await gw.until(`the one-off session ${key} in OpenClaw once its run ended`, 30_000, async () =>
      (await sessionKeys()).includes(key) ? true : undefined,
    );
    await gw.until('the one-off session deleted', 120_000, async () =>
      (await sessionKeys()).includes(key) ? undefined : true,
    );
    const listed = await gw.until('sessions.list', 30_000, sessionKeys);
    assert.ok(listed.includes(keptKey), `the named session ${keptKey} is kept`);
  });

  test('fallbackChannels: a reply whose chat fails for good goes to the next; no failure recorded', async () => {
    const r = await hook('/hooks/agent', {
      message: `fall back ${nonce}`,
      name: `fallback-${nonce}`,
      deliver: true,
      channel: 'telegram',
      to: BROKEN_CHAT,
      fallbackChannels: [{ channel: 'telegram', to: FALLBACK_CHAT }],
    });
    assert.equal(r.status, 200, r.text);
    const runId = r.json.runId as string;
    const sendsTo = (chat: string): Arrival[] =>
      telegram.posts((a) => a.path.endsWith('/sendMessage') && String(a.body?.chat_id) === chat);
    await gw.until('the fallback’s send', 180_000, async () => (sendsTo(FALLBACK_CHAT).length ? true : undefined));
    // hooks.retry.attempts tries of the first chat, then one send to the next.
    assert.equal(sendsTo(BROKEN_CHAT).length, 2);
    assert.deepEqual(
      sendsTo(FALLBACK_CHAT).map((a) => a.body.text),
      [REPLY],
    );
    const run = await finished(runId);
    assert.equal(run.status, 'ok', JSON.stringify(run));
    // The run's page shows the chain: the failed delivery, then the fallback naming it.
    const chain = await gw.until('the chain settled on the run’s page', 30_000, async () => {
      const page = (await admin(`runs/${runId}`)).json;
      return page?.deliveries?.length === 2 && page.deliveries[1].status === 'sent' ? page.deliveries : undefined;
    });
    assert.deepEqual(
      chain.map((d: any) => [d.channel, d.to, d.status, d.fallbackOf]),
      [
        ['telegram', BROKEN_CHAT, 'failed', undefined],
        ['telegram', FALLBACK_CHAT, 'sent', chain[0].id],
      ],
    );
    assert.equal(chain[0].attempts.length, 2, 'its retries were used first');
    const failures = await admin('failures?state=all');
    assert.ok(!failures.json.failures.some((f: { runId: string }) => f.runId === runId), failures.text);
    const metrics = await send('/hookgate/metrics', { token: files.gatewayToken });
    assert.match(metrics.text, /^hookgate_reply_fallbacks_total\{from="telegram",to="telegram"\} 1$/m);
  });
});
