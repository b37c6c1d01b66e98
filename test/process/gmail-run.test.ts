// `hookgate webhooks gmail run` as a real process against the fake Google, posting through a
// scriptable proxy to a real spawned gateway; and the same watcher inside `hookgate gateway`.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { writeGmailCredentials } from '../../gmail/gmail-credentials.ts';
import { FakeGoogle } from '../helpers/fake-google.ts';
import { runCli, runGmail, spawnGmail, startHookProxy, type HookProxy, type RunProcess } from '../helpers/gmail-run.ts';
import {
  GATEWAY_TOKEN,
  eventually,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

let fake: FakeGoogle;
let gateway: SpawnedGateway;
let accounts = 0;

before(async () => {
  fake = await FakeGoogle.start();
  process.env.HOOKGATE_GOOGLE_API_ROOT = fake.url;
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { presets: ['gmail'] } });
  gateway = await spawnGateway(dir);
});
after(async () => {
  await gateway?.stop();
  await fake?.close();
});

interface Mailbox {
  account: string;
  subscription: string;
  stateDir: string;
  configPath: string;
  proxy: HookProxy;
  cursor(): Promise<string>;
  notify(): ReturnType<FakeGoogle['publishGmail']>;
}

/** A fresh account with credentials, subscription, config and a proxy in front of the gateway. */
async function mailbox(gmail: Record<string, unknown> = {}): Promise<Mailbox> {
  const account = `user${++accounts}@example.com`;
  const subscription = `projects/proj-test/subscriptions/sub-${accounts}`;
  fake.subscription(subscription);
  const stateDir = await tempStateDir();
  await writeGmailCredentials(stateDir, account, fake.addAccount(account));
  const configPath = await writeConfig(stateDir, {
    hooks: {
      presets: ['gmail'],
      gmail: { account, project: 'proj-test', subscription: `sub-${accounts}`, topic: 'gmail-watch', ...gmail },
    },
  });
  const proxy = await startHookProxy(gateway.url);
  return {
    account,
    subscription,
    stateDir,
    configPath,
    proxy,
    cursor: async () =>
      JSON.parse(await readFile(path.join(stateDir, 'data', `gmail-${account}.json`), 'utf8')).historyId as string,
    notify: () => fake.publishGmail(subscription, account),
  };
}

async function run(box: Mailbox): Promise<RunProcess> {
  const p = spawnGmail(['run', '--state-dir', box.stateDir, '--gateway-url', box.proxy.url]);
  await p.waitFor(/gmail watcher running/);
  await eventually(async () => fake.mailbox(box.account).watches.length > 0 && (await box.cursor().catch(() => '')));
  return p;
}

/** Every message id posted and run exactly once (one run id however often it was posted). */
function assertEachOnce(box: Mailbox, ids: string[]): void {
  const runs = box.proxy.runIdsById();
  assert.deepEqual([...runs.keys()].sort(), [...ids].sort());
  for (const [id, set] of runs) assert.equal(set.size, 1, `message ${id} ran ${set.size} times`);
}

test('run: every page of history delivered once, in every body format; SENT/DRAFT skipped; bodies clipped; duplicate notification delivers nothing new; watch renewed on schedule', async () => {
  const box = await mailbox({ maxBytes: 300, renewEveryMinutes: 0.01 });
  const p = await run(box);
  try {
    fake.historyPageSize = 2;
    const ids = [
      fake.addMessage(box.account, { format: 'plain', text: 'plain body', subject: 'Plain' }),
      fake.addMessage(box.account, { format: 'alternative', text: 'the plain part', html: '<p>the html part</p>' }),
      fake.addMessage(box.account, {
        format: 'html',
        html: '<style>p{}</style><p>Hello&nbsp;<b>there</b> &amp; you</p>',
      }),
      fake.addMessage(box.account, { format: 'nested', text: 'nested plain' }),
      fake.addMessage(box.account, { text: 'é'.repeat(400) }),
    ];
    const sent = fake.addMessage(box.account, { labels: ['INBOX', 'SENT'] });
    const draft = fake.addMessage(box.account, { labels: ['INBOX', 'DRAFT'] });
    const spam = fake.addMessage(box.account, { labels: ['INBOX', 'SPAM'] });
    const note = box.notify();
    await eventually(async () => note.acked, 10_000);
    fake.historyPageSize = 100;

    assertEachOnce(box, ids);
    const posted = new Map(box.proxy.batches.flatMap((b) => b.messages.map((m) => [m.id, m] as const)));
    assert.ok(![sent, draft, spam].some((id) => posted.has(id)), 'SENT, DRAFT and SPAM are not posted');
    assert.equal(posted.get(ids[0]!)!.body, 'plain body');
    assert.equal(posted.get(ids[0]!)!.subject, 'Plain');
    assert.equal(posted.get(ids[1]!)!.body, 'the plain part', 'the plain part is preferred');
    assert.equal(posted.get(ids[2]!)!.body, 'Hello there & you', 'HTML stripped to text');
    assert.equal(posted.get(ids[3]!)!.body, 'nested plain');
    const clipped = posted.get(ids[4]!)!.body!;
    assert.match(clipped, /^é+\n\[clipped at 300 bytes\]$/);
    assert.equal(Buffer.byteLength(clipped.split('\n')[0]!), 300);
    assert.match(posted.get(ids[0]!)!.from, /^Sender \d+ <sender\d+@example\.com>$/);
    assert.equal(await box.cursor(), String(fake.mailbox(box.account).historyId));

    // The same notification again (Pub/Sub delivers at least once): nothing new is posted.
    const before = box.proxy.batches.length;
    const again = box.notify();
    await eventually(async () => again.acked, 10_000);
    assert.equal(box.proxy.batches.length, before);

    // Renewal every 0.6 s: a few watches within a couple of seconds, not a burst.
    await eventually(async () => fake.mailbox(box.account).watches.length >= 3, 5000);
    const at = fake.mailbox(box.account).watches.map((w) => w.at);
    for (let i = 1; i < at.length; i++) assert.ok(at[i]! - at[i - 1]! >= 400, 'renewals are spaced');

    // status prints a table from the status file (no gateway answers for this account).
    await eventually(async () =>
      (
        await readFile(path.join(box.stateDir, 'data', `gmail-${box.account}.status.json`), 'utf8').catch(() => '')
      ).includes('"messagesDelivered": 5'),
    );
    const status = await runGmail(['status', '--state-dir', box.stateDir, '--gateway-url', 'http://127.0.0.1:9']);
    assert.equal(status.code, 0, status.out);
    assert.match(status.out, new RegExp(`^account +${box.account}$`, 'm'));
    assert.match(status.out, /^delivered +5$/m);
    assert.match(status.out, /^skipped +3$/m);
    assert.match(status.out, /^last error +none$/m);
    assert.ok(!status.out.trim().startsWith('{'), 'a table, not JSON');
  } finally {
    await p.stop();
    await box.proxy.close();
  }
  assert.ok(!p.output().includes('ya29.'), 'no access token in the output');
});

test('run: the hook answering 500 then 200 delivers each message once; cursor and ack wait for the 2xx', async () => {
  const box = await mailbox();
  const p = await run(box);
  try {
    const start = await box.cursor();
    box.proxy.failNext(500, 2);
    const ids = [fake.addMessage(box.account), fake.addMessage(box.account), fake.addMessage(box.account)];
    const note = box.notify();
    await eventually(async () => box.proxy.batches.length >= 1, 10_000);
    assert.equal(await box.cursor(), start, 'cursor unmoved after a 500');
    assert.equal(note.acked, false, 'not acknowledged after a 500');
    await eventually(async () => note.acked, 15_000);
    assert.deepEqual(
      box.proxy.batches.map((b) => b.status),
      [500, 500, 202],
    );
    assertEachOnce(box, ids);
    assert.equal(await box.cursor(), String(fake.mailbox(box.account).historyId));
    assert.match(p.output(), /"gmail sync failed".*the gmail hook answered 500/);
  } finally {
    await p.stop();
    await box.proxy.close();
  }
});

test('run: a 413 splits the batch into smaller ones, with no loop', async () => {
  const box = await mailbox();
  const p = await run(box);
  try {
    box.proxy.maxMessages = 2;
    const ids = Array.from({ length: 7 }, () => fake.addMessage(box.account));
    const note = box.notify();
    await eventually(async () => note.acked, 10_000);
    assertEachOnce(box, ids);
    const statuses = box.proxy.batches.map((b) => b.status);
    // 7 -> 4+3 -> 2+2 + 2+1: three 413s and four accepted batches, nothing more.
    assert.equal(statuses.filter((s) => s === 413).length, 3);
    assert.equal(statuses.filter((s) => s === 202).length, 4);
    assert.ok(box.proxy.batches.every((b) => b.status === 413 || b.ids.length <= 2));
  } finally {
    await p.stop();
    await box.proxy.close();
  }
});

test('run: a cursor older than Gmail history resyncs only the newest resyncMessages', async () => {
  const box = await mailbox({ resyncMessages: 4 });
  const p = await run(box);
  try {
    const ids = Array.from({ length: 10 }, () => fake.addMessage(box.account));
    fake.mailbox(box.account).historyFloor = fake.mailbox(box.account).historyId;
    const note = box.notify();
    await eventually(async () => note.acked, 10_000);
    assertEachOnce(box, ids.slice(-4));
    assert.equal(await box.cursor(), String(fake.mailbox(box.account).historyId));
    assert.match(p.output(), /resynced the newest messages/);
  } finally {
    await p.stop();
    await box.proxy.close();
  }
});

test('run: an expired access token is refreshed and the message still delivered', async () => {
  const box = await mailbox();
  const p = await run(box);
  try {
    const refreshes = () => fake.calls('POST', /^\/token$/).length;
    const before = refreshes();
    fake.expireAccessTokens();
    const id = fake.addMessage(box.account);
    const note = box.notify();
    await eventually(async () => note.acked, 10_000);
    assertEachOnce(box, [id]);
    assert.ok(refreshes() > before, 'a new access token was fetched');
  } finally {
    await p.stop();
    await box.proxy.close();
  }
});

test('run: empty pulls answered at once do not make a hot loop', async () => {
  const box = await mailbox();
  const p = await run(box);
  fake.pullHoldMs = 0;
  try {
    const pulls = () => fake.calls('POST', new RegExp(`${box.subscription.split('/').pop()}:pull$`));
    const before = pulls().length;
    await eventually(async () => pulls().length >= before + 4, 20_000);
    // The watcher leaves MIN_PULL_INTERVAL_MS (1 s) between the starts of two pulls answered empty;
    // the fake sees each start a little after the watcher took its time, hence half of it here. A
    // busy machine only makes the gaps longer; a hot loop makes them a few ms.
    const at = pulls()
      .slice(before)
      .map((c) => c.at);
    for (let i = 1; i < at.length; i++) assert.ok(at[i]! - at[i - 1]! >= 500, `pulls ${at[i]! - at[i - 1]!} ms apart`);
  } finally {
    fake.pullHoldMs = 500;
    await p.stop();
    await box.proxy.close();
  }
});

test('run: kill -9 mid-batch and a restart lose nothing and run nothing twice', async () => {
  const box = await mailbox();
  let p = await run(box);
  const ids = Array.from({ length: 60 }, () => fake.addMessage(box.account, { text: 'x'.repeat(50) }));
  box.proxy.delayMs = 150;
  try {
    const note = box.notify();
    // The first chunk accepted, the rest still under way: kill without a chance to clean up.
    await eventually(async () => box.proxy.batches.some((b) => b.status === 202), 15_000);
    await p.stop('SIGKILL');
    const delivered = new Set(box.proxy.batches.filter((b) => b.status === 202).flatMap((b) => b.ids));
    assert.ok(delivered.size > 0 && delivered.size < ids.length, `killed mid-way (${delivered.size} delivered)`);
    assert.equal(note.acked, false);
    p = await run(box);
    // The restart catches up from the stored cursor at once; the notification comes again later.
    await eventually(async () => box.proxy.runIdsById().size === ids.length, 20_000);
    assertEachOnce(box, ids);
    const repeated = box.proxy.batches.filter((b) => b.answer?.duplicates || b.answer?.duplicate);
    assert.ok(repeated.length > 0, 'the overlap was posted again and absorbed by the dedupe');
  } finally {
    await p.stop();
    await box.proxy.close();
  }
});

test('run: without stored credentials it exits at once saying to run setup', async () => {
  const box = await mailbox();
  const other = await tempStateDir();
  await writeConfig(other, {
    hooks: { presets: ['gmail'], gmail: { account: 'nobody@example.com', project: 'proj-test' } },
  });
  const r = await runGmail(['run', '--state-dir', other, '--gateway-url', box.proxy.url]);
  await box.proxy.close();
  assert.equal(r.code, 1);
  assert.match(r.out, /no Gmail credentials for nobody@example\.com .*run `hookgate webhooks gmail setup` first/);
  const help = await runGmail(['--help']);
  assert.match(help.out, /^ {2}run /m);
  assert.match(help.out, /^ {2}status /m);
});

test('gateway: runs the watcher itself; a revoked token is a clear error in the log and GET /api/gmail', async () => {
  const account = `user${++accounts}@example.com`;
  fake.subscription(`projects/proj-test/subscriptions/sub-${accounts}`);
  const dir = await tempStateDir();
  await writeGmailCredentials(dir, account, fake.addAccount(account));
  await writeConfig(dir, {
    hooks: { presets: ['gmail'], gmail: { account, project: 'proj-test', subscription: `sub-${accounts}` } },
  });
  const gw = await spawnGateway(dir);
  try {
    const ok = await eventually(async () => {
      const s = await gw.admin('/api/gmail');
      return s.cursor && s.watchExpiresAt ? s : undefined;
    });
    assert.equal(ok.account, account);
    assert.equal(ok.mode, 'pull');
    assert.equal(ok.lastError, null);
    const id = fake.addMessage(account);
    fake.publishGmail(`projects/proj-test/subscriptions/sub-${accounts}`, account);
    await eventually(async () => (await gw.admin('/api/gmail')).counters.messagesDelivered === 1, 10_000);
    const sessions = await gw.admin('/api/sessions');
    assert.ok(JSON.stringify(sessions).includes(`hook:gmail:${id}`));

    fake.revokeGrants(account);
    fake.addMessage(account);
    fake.publishGmail(`projects/proj-test/subscriptions/sub-${accounts}`, account);
    const failed = await eventually(async () => {
      const s = await gw.admin('/api/gmail');
      return s.lastError ? s : undefined;
    }, 10_000);
    assert.match(failed.lastError.message, /invalid_grant/);
    assert.match(failed.lastError.message, /run `hookgate webhooks gmail setup` again/);
    await eventually(async () => /"gmail sync failed".*invalid_grant.*setup/.test(gw.output()));
    assert.ok(!gw.output().includes('1//fake-refresh'), 'no refresh token in the log');
    // /metrics counts what the watcher saw: its notifications, and the refused refresh token.
    const metrics = await (
      await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } })
    ).text();
    const { counters } = await gw.admin('/api/gmail');
    assert.match(metrics, new RegExp(`^hookgate_gmail_notifications_total ${counters.notifications}$`, 'm'));
    assert.ok(counters.notifications >= 1, JSON.stringify(counters));
    assert.match(metrics, /^hookgate_gmail_errors_total\{stage="other"\} [1-9]\d*$/m);
  } finally {
    await gw.stop();
  }
});

test('run in push mode: a valid OIDC token starts a sync; wrong audience, issuer, email, expiry or signature are 401 and deliver nothing', async () => {
  const endpoint = 'https://hooks.example.test/gmail-pubsub';
  const serviceAccount = 'gmail-push@proj-test.iam.gserviceaccount.com';
  const box = await mailbox({
    mode: 'push',
    pushEndpoint: endpoint,
    pushServiceAccount: serviceAccount,
    serve: { bind: '127.0.0.1', port: 0, path: '/gmail-pubsub' },
  });
  const p = spawnGmail(['run', '--state-dir', box.stateDir, '--gateway-url', box.proxy.url]);
  try {
    const pushUrl = (await p.waitFor(/push on (http:\/\/[^\s),]+)/))[1]!;
    await eventually(async () => fake.mailbox(box.account).watches.length > 0 && (await box.cursor().catch(() => '')));
    const now = Math.floor(Date.now() / 1000);
    const good = {
      iss: 'https://accounts.google.com',
      aud: endpoint,
      email: serviceAccount,
      email_verified: true,
      iat: now,
      exp: now + 3600,
      sub: '1234567890',
    };
    const push = async (token: string | undefined) => {
      const data = Buffer.from(JSON.stringify({ emailAddress: box.account, historyId: 1 })).toString('base64');
      const r = await fetch(pushUrl, {
        method: 'POST',
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        body: JSON.stringify({
          message: { data, messageId: '42' },
          subscription: 'projects/proj-test/subscriptions/x',
        }),
      });
      return { status: r.status, body: await r.text() };
    };

    const first = fake.addMessage(box.account);
    assert.equal((await push(fake.signJwt(good))).status, 204);
    assertEachOnce(box, [first]);

    const waiting = fake.addMessage(box.account);
    const posted = box.proxy.batches.length;
    const forged = { ...good, aud: endpoint };
    const refused: [string, string | undefined][] = [
      ['no token', undefined],
      ['wrong audience', fake.signJwt({ ...good, aud: 'https://attacker.example/push' })],
      ['wrong issuer', fake.signJwt({ ...good, iss: 'https://evil.example.com' })],
      ['wrong email', fake.signJwt({ ...good, email: 'someone@else.iam.gserviceaccount.com' })],
      ['unverified email', fake.signJwt({ ...good, email_verified: false })],
      ['expired', fake.signJwt({ ...good, iat: now - 7200, exp: now - 3600 })],
      ['signed by a key Google never published', fake.signJwt(forged, FakeGoogle.strayKey())],
      ['alg none', fake.signJwt(good).replace(/^[^.]+/, Buffer.from('{"alg":"none","kid":"x"}').toString('base64url'))],
      ['not a JWT', 'abc'],
    ];
    for (const [what, token] of refused) {
      const r = await push(token);
      assert.equal(r.status, 401, what);
      assert.match(r.body, /"code":"unauthorized"/, what);
    }
    assert.equal(box.proxy.batches.length, posted, 'nothing delivered by a refused push');

    // Google rotates its keys: a token from the new key fetches them again.
    fake.rotateKeys(true);
    // The gateway fetches the keys again at most every 2 s (REFETCH_MS, so forged key ids cannot make
    // it hammer Google): waiting that long after the fake's last fetch is the behaviour under test.
    const lastFetch = fake.calls('GET', /^\/oauth2\/v3\/certs$/).at(-1)!.at;
    await new Promise((r) => setTimeout(r, Math.max(0, lastFetch + 2000 - Date.now())));
    assert.equal((await push(fake.signJwt(good))).status, 204);
    assertEachOnce(box, [first, waiting]);
    assert.ok(!p.output().includes(fake.signJwt(good).split('.')[2]!), 'no token in the log');
  } finally {
    await p.stop();
    await box.proxy.close();
  }
});

test('gateway and config check refuse a hooks.gmail that cannot run, naming the key', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    hooks: { presets: ['gmail'], gmail: { account: 'me@example.com', project: 'proj-test', mode: 'push' } },
  });
  await assert.rejects(spawnGateway(dir), /hooks\.gmail\.pushEndpoint is required when hooks\.gmail\.mode is push/);
  const check = await runCli(['config', 'check', '--state-dir', dir]);
  assert.equal(check.code, 1);
  assert.match(check.out, /hooks\.gmail\.pushEndpoint is required/);

  // Nothing answers <hooks.path>/gmail: the watcher would have nowhere to post.
  const nowhere = await tempStateDir();
  await writeConfig(nowhere, { hooks: { gmail: { account: 'me@example.com', project: 'proj-test' } } });
  // Refused before the gateway runs anything: the process ends, it does not hang on its plugin.
  await assert.rejects(spawnGateway(nowhere), /exited with 1 before listening[\s\S]*hooks\.presets must list "gmail"/);
  const unowned = await runCli(['config', 'check', '--state-dir', nowhere]);
  assert.equal(unowned.code, 1);
  assert.match(unowned.out, /hooks\.presets must list "gmail"/);
});

test('gateway --no-gmail leaves the watcher to `run`, and shows what run last wrote', async () => {
  const box = await mailbox();
  const gw = await spawnGateway(box.stateDir, ['--no-gmail']);
  try {
    const none = await fetch(`${gw.url}/api/gmail`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
    assert.equal(none.status, 404);
    const p = await run(box);
    // A watcher in the gateway would have asked for its watch as it started listening, before run
    // was even started: once run's watch is in, a second one would be too.
    await eventually(async () => fake.mailbox(box.account).watches.length >= 1);
    await p.stop();
    assert.equal(fake.mailbox(box.account).watches.length, 1, 'one watch, from run; none from the gateway');
    const state = await eventually(async () => {
      const r = await fetch(`${gw.url}/api/gmail`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
      return r.status === 200 ? ((await r.json()) as any) : undefined;
    });
    assert.equal(state.account, box.account);
    assert.equal(state.cursor, await box.cursor());
    assert.equal(typeof state.pid, 'number');
  } finally {
    await gw.stop();
    await box.proxy.close();
  }
});
