// Reply deliveries through a real OpenClaw channel: OpenClaw's own Telegram channel, pointed by
// channels.telegram.apiRoot (its setting for a self-hosted Bot API) at a fake Bot API on loopback.
// A send the platform fails is tried again by hookgate (hooks.retry) with the same text and reaches
// the chat once; a platform that keeps failing gets hooks.retry.attempts sends, then the delivery is
// a dead letter in GET /hookgate/api/failures and is not sent again. Registered by run.ts.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type GatewayFiles,
  type HooksBlock,
  installPlugin,
  prepareFiles,
  type RunningGateway,
  startGateway,
  stopModelGateway,
  withFakeModel,
} from './openclaw-env.ts';
import { readStateRecords } from '../plugin/util/state-file.ts';
import { startFakeProvider, streamReply, type FakeProvider } from '../test/helpers/fake-provider.ts';
import { type Arrival, FakePlatform } from '../test/helpers/fake-channels/fake-platform.ts';
import { botApi, INTERNAL_ERROR } from './fake-bot-api.ts';
import { tooManyRequests } from '../test/helpers/fake-channels/telegram.ts';

const nonce = Math.random().toString(36).slice(2, 8);
const BOT_TOKEN = `987654321:AAtest-${nonce}-abcdefghijklmnopqrstu`;
const REPLY = `delivered ${nonce}`;
/** The chat whose every send the platform answers 500. */
const BROKEN_CHAT = '1003';
/** hooks.retry.attempts: sends of one delivery in all, the first included. */
const ATTEMPTS = 3;

const HOOKS: HooksBlock = {
  enabled: true,
  token: `hook-channel-${nonce}-0123456789`,
  path: '/hooks',
  // A failed send waits 1 to 2 s for the next.
  retry: { attempts: ATTEMPTS, initialDelaySeconds: 2, maxDelaySeconds: 2 },
};

let files: GatewayFiles;
let gw: RunningGateway;
let model: FakeProvider;
let telegram: FakePlatform;

const isSendTo =
  (chat: string) =>
  (a: Arrival): boolean =>
    a.path.endsWith('/sendMessage') && String(a.body?.chat_id) === chat;

const sendsTo = (chat: string): Arrival[] => telegram.posts(isSendTo(chat));

/** The scripted failures this chat has not been given yet (each is used by one send). */
const scriptedFor = (chat: string): number =>
  telegram.aimed.filter((s) => s.match({ path: `/bot${BOT_TOKEN}/sendMessage`, body: { chat_id: chat } } as Arrival))
    .length;

async function admin(rest: string): Promise<any> {
  const res = await fetch(`${gw.url}/hookgate/api/${rest}`, {
    headers: { authorization: `Bearer ${files.gatewayToken}` },
    signal: AbortSignal.timeout(15_000),
  });
  assert.equal(res.status, 200, `GET ${rest}`);
  return res.json();
}

/** Posts an agent run whose reply goes to the Telegram chat; resolves with its runId. */
async function runFor(name: string, chat: string): Promise<string> {
  const res = await fetch(`${gw.url}/hooks/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOKS.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: `reply to ${chat}`, name, deliver: true, channel: 'telegram', to: chat }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { runId: string };
  assert.equal(res.status, 202, JSON.stringify(body));
  return body.runId;
}

/** Whether hookgate holds no waiting delivery for the run: nothing will send it again. */
async function settled(runId: string): Promise<boolean> {
  const found = (await readdir(files.stateDir, { recursive: true })).find(
    (f) => path.basename(f) === 'deliveries.jsonl' && f.includes(`hookgate${path.sep}after`),
  );
  assert.ok(found, 'hookgate keeps its waiting deliveries in <stateDir>/hookgate/after/deliveries.jsonl');
  const { records } = await readStateRecords(path.join(files.stateDir, found), (v): v is { runId: string } => !!v);
  return ![...records.values()].some((w) => w.runId === runId);
}

/** hookgate logged that it scheduled the delivery of this run again. */
const hookgateRetried = (runId: string): boolean =>
  gw.lines.some((l) => l.includes('a reply delivery failed; trying again later') && l.includes(`runId=${runId}`));

describe('reply deliveries through OpenClaw’s Telegram channel', { timeout: 8 * 60_000 }, () => {
  before(
    async () => {
      telegram = await new FakePlatform(botApi(BOT_TOKEN, BROKEN_CHAT)).start();
      model = await startFakeProvider((_req, res) => streamReply(res, REPLY));
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
      await gw.waitForLine(/hookgate ready/, 120_000);
    },
    { timeout: 5 * 60_000 },
  );

  after(async () => {
    await stopModelGateway({ files, gw, model });
    await telegram?.close();
  });

  test('a send answered 500 is tried again by hookgate with the same text and reaches the chat once', async () => {
    const chat = '1001';
    telegram.aimed.push({ match: isSendTo(chat), reply: INTERNAL_ERROR });
    const runId = await runFor(`tg-500-${nonce}`, chat);
    await gw.until('the delivery sent and settled', 180_000, async () =>
      scriptedFor(chat) === 0 && sendsTo(chat).length >= 2 && (await settled(runId)) ? true : undefined,
    );
    // OpenClaw does not try a 500 again itself: the second send is hookgate's.
    assert.ok(hookgateRetried(runId), gw.tail(20));
    const sends = sendsTo(chat);
    assert.equal(sends.length, 2, 'the failed send and one retry');
    assert.deepEqual(
      sends.map((a) => a.body.text),
      [REPLY, REPLY],
    );
    const run = await admin(`runs/${runId}`);
    assert.equal(run.status, 'ok', JSON.stringify(run));
    const failures = await admin('failures?state=all');
    assert.ok(!failures.failures.some((f: { runId: string }) => f.runId === runId), JSON.stringify(failures));
  });

  test('429s past OpenClaw’s own tries: hookgate tries again and one message arrives', async () => {
    const chat = '1002';
    // OpenClaw's Telegram sender tries a 429 three times itself; the fourth 429 outlasts those.
    const limited = 4;
    for (let i = 0; i < limited; i++) telegram.aimed.push({ match: isSendTo(chat), reply: tooManyRequests(1) });
    const runId = await runFor(`tg-429-${nonce}`, chat);
    await gw.until('the delivery sent and settled', 180_000, async () =>
      scriptedFor(chat) === 0 && sendsTo(chat).length > limited && (await settled(runId)) ? true : undefined,
    );
    assert.ok(hookgateRetried(runId), gw.tail(20));
    const sends = sendsTo(chat);
    // Every 429 was used up by a send, and the one after them was answered 200: nothing after it.
    assert.equal(sends.length, limited + 1);
    assert.ok(
      sends.every((a) => a.body.text === REPLY),
      JSON.stringify(sends.map((a) => a.body)),
    );
  });

  test('a platform that keeps failing: hooks.retry.attempts sends, a dead letter in GET /hookgate/api/failures, no send after it', async () => {
    const name = `tg-broken-${nonce}`;
    const runId = await runFor(name, BROKEN_CHAT);
    const letter = await gw.until('the dead letter', 180_000, async () => {
      const listed = await admin(`failures?hook=${encodeURIComponent(name)}`);
      return listed.failures.find((f: { runId: string }) => f.runId === runId);
    });
    assert.deepEqual(
      [letter.kind, letter.channel, letter.to, letter.attempts, letter.state],
      ['delivery', 'telegram', BROKEN_CHAT, ATTEMPTS, 'open'],
    );
    assert.match(letter.lastError, /500/);
    assert.ok(!JSON.stringify(letter).includes(BOT_TOKEN.split(':')[1]!), 'no bot token in the dead letter');
    await gw.until('the delivery settled', 30_000, async () => ((await settled(runId)) ? true : undefined));
    const sends = sendsTo(BROKEN_CHAT);
    // OpenClaw does not try a 500 again itself: hookgate's tries are all the sends.
    assert.equal(sends.length, ATTEMPTS, JSON.stringify(sends.map((a) => a.at)));
    assert.ok(sends.every((a) => a.body.text === REPLY));
    // The run itself ended ok: its reply was made, only the delivery failed.
    assert.equal((await admin(`runs/${runId}`)).status, 'ok');
  });
});
