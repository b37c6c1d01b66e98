// The channel senders against a fake of each platform (real loopback servers): what each sends,
// what it reads back, how it fails, the pace it keeps and the secrets it never lets out.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { resolveChannels, type Channel } from '../../channels/index.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { assertNoSecret, channelsConfig, SECRETS, startFakes, type Fakes } from '../helpers/fake-channels/index.ts';
import { tooManyRequests } from '../helpers/fake-channels/telegram.ts';
import { discordLimited } from '../helpers/fake-channels/discord.ts';

let fakes: Fakes;
let channels: ReadonlyMap<string, Channel>;

before(async () => {
  fakes = await startFakes();
  const problems: string[] = [];
  channels = resolveChannels(channelsConfig(fakes) as never, '/', problems).senders;
  assert.deepEqual(problems, []);
});
after(() => fakes.close());

const sender = (name: string): Channel => channels.get(name)!;

test('every channel sends through its platform API and reads back the message ids', async () => {
  const sent = await Promise.all([...channels.values()].map((c) => c.deliver(undefined, `hello from ${c.name}`)));
  for (const [i, c] of [...channels.values()].entries())
    assert.equal(sent[i]!.status, 'sent', `${c.name}: ${JSON.stringify(sent[i])}`);
  const byName = Object.fromEntries([...channels.keys()].map((n, i) => [n, sent[i]!]));
  const last = (f: keyof Omit<Fakes, 'close'>) => fakes[f].arrivals.at(-1)!;
  assert.deepEqual(last('telegram').body, { chat_id: '1001', text: 'hello from telegram' });
  assert.deepEqual(byName.telegram, { status: 'sent', messageIds: ['1'], parts: 1 });
  assert.deepEqual(last('slack').body, { channel: 'C100', text: 'hello from slack' });
  assert.match(byName.slack!.messageIds[0]!, /^\d+\.\d+$/);
  assert.equal(last('discord').query.get('wait'), 'true');
  assert.equal(last('discord').body.content, 'hello from discord');
  assert.match(byName.discord!.messageIds[0]!, /^\d{19}$/);
  assert.deepEqual(last('mattermost').body, { channel_id: 'town-square-id', message: 'hello from mattermost' });
  assert.deepEqual(byName.mattermost!.messageIds, ['post1']);
  assert.equal(last('msteams').body.attachments[0].content.body[0].text, 'hello from msteams');
  assert.deepEqual(byName.msteams!.messageIds, [], 'Teams gives no id');
  assert.deepEqual(last('signal').body, {
    message: 'hello from signal',
    number: '+15550001111',
    recipients: ['+15550002222'],
  });
  assert.match(byName.signal!.messageIds[0]!, /^\d{13}$/);
  assert.equal(last('whatsapp').body.to, '15550003333');
  assert.deepEqual(last('whatsapp').body.text, { body: 'hello from whatsapp', preview_url: false });
  assert.match(byName.whatsapp!.messageIds[0]!, /^wamid\./);
  assert.equal(last('imessage').body.chatGuid, 'iMessage;-;+15550004444');
  assert.deepEqual(byName.imessage!.messageIds, ['msg-1']);
});

test('channels check: each credential with the cheapest authenticated call; webhooks that cannot be checked say so', async () => {
  const results = Object.fromEntries(
    await Promise.all([...channels].map(async ([n, c]) => [n, await c.check()] as const)),
  );
  assert.deepEqual(results.telegram, { ok: true, detail: 'bot @hooks_bot' });
  assert.equal(fakes.telegram.arrivals.at(-1)!.path.endsWith('/getMe'), true);
  assert.equal(results.slack!.detail, 'bot hooks in team Example');
  assert.match(results.discord!.detail, /webhook "Hooks" for channel 555/);
  assert.equal(results.mattermost!.detail, 'user @hooks-bot');
  assert.equal(results.msteams!.unverifiable, true);
  assert.match(results.signal!.detail, /\+15550001111 registered/);
  assert.match(results.whatsapp!.detail, /\+1 555-0100/);
  assert.match(results.imessage!.detail, /BlueBubbles 1\.9\.9/);
  for (const r of Object.values(results)) assert.equal(r!.ok, true);
  const wrong = resolveChannels(
    channelsConfig(fakes, {
      telegram: { botToken: '999:WRONG-token-value' },
      slack: { botToken: 'xoxb-wrong-token' },
    }) as never,
    '/',
    [],
  ).senders;
  assert.deepEqual(await wrong.get('telegram')!.check(), { ok: false, detail: 'HTTP 401: Unauthorized' });
  assert.deepEqual(await wrong.get('slack')!.check(), { ok: false, detail: 'Slack: invalid_auth' });
});

test('a refusal fails at once with the platform description; Slack ok:false on HTTP 200 is a failure', async () => {
  const cases: [string, string, RegExp][] = [
    ['telegram', '404', /^HTTP 400: Bad Request: chat not found$/],
    ['slack', 'C404', /^Slack: channel_not_found$/],
    ['mattermost', 'nochannel', /^HTTP 403: You do not have the appropriate permissions\.$/],
    ['signal', '+10000000000', /^HTTP 400: Failed to send message: Unregistered user$/],
    ['whatsapp', '15550000000', /^HTTP 400: Message undeliverable: Message could not be delivered \(code 131026\)$/],
  ];
  for (const [name, to, description] of cases) {
    const fake = fakes[name as 'telegram'];
    const before = fake.arrivals.length;
    const r = await sender(name).deliver(to, 'x'.repeat(5000));
    assert.equal(r.status, 'failed', name);
    assert.ok(r.status === 'failed' && !r.retryable && r.sentParts === 0, name);
    assert.match(r.status === 'failed' ? r.description : '', description);
    assert.equal(fake.arrivals.length - before, 1, `${name}: one request, no retry, no further part`);
  }
});

test('a 5xx is retryable and not retried here (the retry schedule is not this layer)', async () => {
  const before = fakes.imessage.arrivals.length;
  const r = await sender('imessage').deliver('iMessage;-;nobody', 'hi');
  assert.ok(r.status === 'failed' && r.retryable);
  assert.match(r.status === 'failed' ? r.description : '', /^HTTP 500: Failed to send message!: Chat does not exist$/);
  assert.equal(fakes.imessage.arrivals.length - before, 1);
});

test('a 429 ends the attempt with its announced wait, and the pacer holds every send until it is over', async () => {
  fakes.telegram.scriptLimit(tooManyRequests(1), 1000);
  const r = await sender('telegram').deliver('2002', 'after the wait');
  assert.ok(r.status === 'failed' && r.retryable && r.waitMs === 1000, JSON.stringify(r));
  // Telegram's wait holds the whole bot: a send to another chat waits too.
  assert.equal((await sender('telegram').deliver('2003', 'another chat')).status, 'sent');
  const next = fakes.telegram.arrivals.find((a) => a.body?.chat_id === '2003')!;
  assert.ok(next.at >= fakes.telegram.limited[0]!.at + 1000, 'no request before the announced wait');

  // Discord's body says 0.4 s, its Retry-After header rounds up: the body's precise wait is used.
  fakes.discord.scriptLimit(discordLimited(0.4), 400);
  const d = await sender('discord').deliver(undefined, 'discord after the wait');
  assert.ok(d.status === 'failed' && d.retryable && d.waitMs === 400, JSON.stringify(d));
  assert.equal((await sender('discord').deliver(undefined, 'discord after the wait', { fromPart: 0 })).status, 'sent');
  const posts = fakes.discord.arrivals.filter((a) => a.body?.content === 'discord after the wait');
  assert.equal(posts.length, 2);
  assert.ok(posts[1]!.at >= fakes.discord.limited[0]!.at + 400);
});

test('a burst to one chat is paced: every message arrives, in order, and the platform never answers 429', async () => {
  const texts = Array.from({ length: 4 }, (_, i) => `burst ${i}`);
  const results = await Promise.all(texts.map((t) => sender('telegram').deliver('3003', t)));
  assert.ok(results.every((r) => r.status === 'sent'));
  const arrived = fakes.telegram.arrivals.filter((a) => a.body?.chat_id === '3003').map((a) => a.body.text);
  assert.deepEqual(arrived, texts);
  assert.equal(fakes.telegram.unprovoked429, 0);
  // A Discord webhook takes 5 per 2 s: seven at once all arrive, none refused.
  const discordTexts = Array.from({ length: 7 }, (_, i) => `d${i}`);
  await Promise.all(discordTexts.map((t) => sender('discord').deliver(undefined, t)));
  assert.deepEqual(
    fakes.discord.arrivals.filter((a) => /^d\d$/.test(a.body?.content ?? '')).map((a) => a.body.content),
    discordTexts,
  );
  assert.equal(fakes.discord.unprovoked429, 0);
});

test('a long reply is split at the platform limit and its parts arrive in order', async () => {
  const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i}. ${'word '.repeat(150).trim()}`);
  const text = paragraphs.join('\n\n');
  const r = await sender('discord').deliver(undefined, text);
  assert.ok(r.status === 'sent' && r.parts > 1 && r.messageIds.length === r.parts);
  const parts = fakes.discord.arrivals
    .filter((a) => a.body?.content?.startsWith('Paragraph'))
    .map((a) => a.body.content as string);
  assert.equal(parts.length, r.status === 'sent' ? r.parts : 0);
  assert.equal(parts.join('\n\n'), text, 'cut at paragraph breaks, nothing lost');
  for (const p of parts) assert.ok([...p].length <= 2000);
});

test('no secret leaves a sender, even when the platform echoes the request URL', async () => {
  fakes.telegram.scripted.push({
    status: 400,
    body: { ok: false, error_code: 400, description: `Bad Request: cannot POST /bot${SECRETS.telegram}/sendMessage` },
  });
  const t = await sender('telegram').deliver('4004', 'hi');
  assert.ok(t.status === 'failed');
  assert.match(t.status === 'failed' ? t.description : '', /\/bot\[redacted\]\/sendMessage/);
  fakes.imessage.scripted.push({
    status: 400,
    body: { status: 400, message: `bad url /api/v1/message/text?password=${encodeURIComponent(SECRETS.imessage)}` },
  });
  const i = await sender('imessage').deliver(undefined, 'hi');
  fakes.discord.scripted.push({
    status: 404,
    body: { message: `Unknown Webhook ${SECRETS.discordWebhookToken}`, code: 10015 },
  });
  const d = await sender('discord').deliver(undefined, 'hi');
  const wrongUrl = resolveChannels(
    channelsConfig(fakes, { signal: { url: 'http://127.0.0.1:1' } }) as never,
    '/',
    [],
  ).senders;
  const refused = await wrongUrl.get('signal')!.deliver(undefined, 'hi');
  for (const r of [t, i, d, refused]) {
    assert.equal(r.status, 'failed');
    assertNoSecret(JSON.stringify(r), 'a delivery result');
  }
});

test('config: half a credential names the key; secrets from the environment and from files', async () => {
  const dir = await tempDir('channels-config-');
  await writeFile(path.join(dir, 'token'), `${SECRETS.telegram}\n`);
  process.env.HOOKGATE_TEST_SLACK = SECRETS.slack;
  const problems: string[] = [];
  const r = resolveChannels(
    {
      telegram: { botTokenFile: 'token', apiRoot: fakes.telegram.url, defaultTo: '5005' },
      slack: { botToken: '${HOOKGATE_TEST_SLACK}', apiRoot: fakes.slack.url, defaultTo: 'C5' },
      mattermost: { token: 'abc-def-ghi' },
      whatsapp: { accessToken: '${HOOKGATE_TEST_UNSET}', phoneNumberId: '1' },
      discord: { webhookUrl: 'x', botToken: 'y' },
      msteams: { defaultTo: 'only records' },
    },
    dir,
    problems,
  );
  assert.deepEqual(problems.sort(), [
    'channels.discord.webhookUrl is not a URL',
    'channels.discord: give webhookUrl or botToken, not both',
    'channels.mattermost.url is required',
    'channels.whatsapp.accessToken: environment variable HOOKGATE_TEST_UNSET is not set',
  ]);
  assert.equal(r.senders.has('msteams'), false, 'no credentials: recorded only');
  const sent = await r.senders.get('telegram')!.deliver(undefined, 'from a token file');
  assert.equal(sent.status, 'sent');
  assert.equal((await r.senders.get('slack')!.check()).ok, true);
  assert.equal(r.redactor.clean(`x ${SECRETS.slack} y`), 'x [redacted] y');
});
