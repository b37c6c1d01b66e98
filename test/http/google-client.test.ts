// The Google client base against the fake Google over loopback: token refresh and caching, a 401
// retried with a fresh token, a revoked grant, history through every page, the 404 floor, errors that
// name the step and never the token, and the credentials file's modes.
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { AccessTokenSource } from '../../gmail/access-token.ts';
import { GmailApi } from '../../gmail/gmail-api.ts';
import { readGmailCredentials, writeGmailCredentials } from '../../gmail/gmail-credentials.ts';
import { googleEndpoints } from '../../gmail/google-endpoints.ts';
import { GoogleApiError } from '../../gmail/google-request.ts';
import { PubSubPull } from '../../gmail/pubsub-pull.ts';
import { FakeGoogle } from '../helpers/fake-google.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const ACCOUNT = 'me@example.com';
let fake: FakeGoogle;

before(async () => {
  fake = await FakeGoogle.start();
});
after(async () => fake.close());

/** now: the clock the token source reads (the fake's tokens expire by the real one). */
function client(now?: () => number): { tokens: AccessTokenSource; gmail: GmailApi; refreshToken: string } {
  const credentials = fake.addAccount(ACCOUNT);
  const endpoints = googleEndpoints({ HOOKGATE_GOOGLE_API_ROOT: fake.url });
  const tokens = new AccessTokenSource({ credentials, tokenUrl: endpoints.token, ...(now ? { now } : {}) });
  return { tokens, gmail: new GmailApi({ baseUrl: endpoints.gmail, tokens }), refreshToken: credentials.refresh_token };
}

test('endpoints hang off HOOKGATE_GOOGLE_API_ROOT, else the real hosts', () => {
  const e = googleEndpoints({ HOOKGATE_GOOGLE_API_ROOT: 'http://127.0.0.1:9/' });
  assert.deepEqual(e, {
    gmail: 'http://127.0.0.1:9/gmail/v1',
    pubsub: 'http://127.0.0.1:9/v1',
    token: 'http://127.0.0.1:9/token',
    auth: 'http://127.0.0.1:9/o/oauth2/v2/auth',
    certs: 'http://127.0.0.1:9/oauth2/v3/certs',
  });
  assert.equal(googleEndpoints({}).token, 'https://oauth2.googleapis.com/token');
  assert.throws(() => googleEndpoints({ HOOKGATE_GOOGLE_API_ROOT: 'file:///etc' }), /HOOKGATE_GOOGLE_API_ROOT/);
});

test('one token serves many calls; an expired one is refreshed after the 401', async () => {
  const { tokens, gmail } = client();
  await gmail.currentHistoryId();
  await gmail.currentHistoryId();
  assert.equal(tokens.refreshes, 1);
  fake.expireAccessTokens();
  await gmail.currentHistoryId();
  assert.equal(tokens.refreshes, 2);
});

test('a short-lived token is refreshed before it expires, without a 401', async () => {
  // A 60 s token on a clock moved on by 45 s: past the middle of its life, where it is renewed early,
  // and far from expired (the fake expires it by the real clock).
  fake.tokenLifetimeSeconds = 60;
  let skew = 0;
  try {
    const { tokens, gmail } = client(() => Date.now() + skew);
    await gmail.currentHistoryId();
    skew = 45_000;
    const before401 = fake.requests.filter((r) => r.path.endsWith('/profile')).length;
    await gmail.currentHistoryId();
    assert.equal(tokens.refreshes, 2);
    assert.equal(fake.requests.filter((r) => r.path.endsWith('/profile')).length, before401 + 1, 'no refused call');
  } finally {
    fake.tokenLifetimeSeconds = 3600;
  }
});

test('a revoked grant is an error naming the step and saying to run setup, without the token', async () => {
  const { gmail, refreshToken } = client();
  fake.revokeGrants(ACCOUNT);
  const err = await gmail.currentHistoryId().then(
    () => assert.fail('expected an error'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof GoogleApiError);
  assert.equal(err.grantRevoked, true);
  assert.match(err.message, /^access token refresh failed: HTTP 400 invalid_grant/);
  assert.match(err.message, /7 days/);
  assert.match(err.message, /webhooks gmail setup/);
  assert.ok(!err.message.includes(refreshToken));
});

test('Google errors carry status, reason and a hint for the step', async () => {
  const { gmail } = client();
  fake.failNext(
    'GET',
    /\/profile$/,
    FakeGoogle.error(
      403,
      'PERMISSION_DENIED',
      'Gmail API has not been used in project 1 before or it is disabled.',
      'SERVICE_DISABLED',
    ),
  );
  const err = (await gmail.currentHistoryId().catch((e: unknown) => e)) as GoogleApiError;
  assert.equal(err.status, 403);
  assert.equal(err.googleStatus, 'PERMISSION_DENIED');
  assert.equal(err.reason, 'SERVICE_DISABLED');
  assert.equal(err.step, 'gmail users.getProfile');
  assert.match(err.hint, /Enable this API/);
  assert.equal(err.retryable, false);
});

test('history is read through every page; a cursor under the floor is a 404', async () => {
  const { gmail } = client();
  const start = String(fake.mailbox(ACCOUNT).historyId);
  const ids = Array.from({ length: 7 }, () => fake.addMessage(ACCOUNT));
  fake.historyPageSize = 3;
  try {
    const result = await gmail.listHistory(start, 'INBOX');
    assert.deepEqual(result.messageIds, ids);
    assert.equal(result.pages, 3);
    assert.equal(result.historyId, String(fake.mailbox(ACCOUNT).historyId));
  } finally {
    fake.historyPageSize = 100;
  }
  fake.mailbox(ACCOUNT).historyFloor = Number(start) + 1;
  const err = (await gmail.listHistory(start).catch((e: unknown) => e)) as GoogleApiError;
  assert.equal(err.status, 404);
  fake.mailbox(ACCOUNT).historyFloor = 0;
  assert.equal(await gmail.getMessage('nope'), undefined);
  assert.deepEqual(await gmail.listMessages(2), [ids[6], ids[5]]);
});

test('pull hands out published notifications; acknowledged ones are not handed out again', async () => {
  const { tokens } = client();
  const endpoints = googleEndpoints({ HOOKGATE_GOOGLE_API_ROOT: fake.url });
  fake.subscription('projects/p/subscriptions/s');
  const pubsub = new PubSubPull({ baseUrl: endpoints.pubsub, project: 'p', subscription: 's', tokens });
  fake.publishGmail('projects/p/subscriptions/s', ACCOUNT);
  const got = await pubsub.pull(10);
  assert.equal(got.length, 1);
  assert.equal(JSON.parse(got[0]!.data).emailAddress, ACCOUNT);
  await pubsub.acknowledge([got[0]!.ackId]);
  fake.pullHoldMs = 50;
  assert.deepEqual(await pubsub.pull(10), []);
  fake.pullHoldMs = 500;
});

test('credentials are written 0600 in a 0700 directory and read back', async () => {
  const dir = await tempDir('hookgate-cred-');
  const creds = { client_id: 'c', client_secret: 's', refresh_token: 'r' };
  const file = await writeGmailCredentials(dir, ACCOUNT, creds);
  assert.equal(file, path.join(dir, 'secrets', `gmail-${ACCOUNT}.json`));
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.equal((await stat(path.dirname(file))).mode & 0o777, 0o700);
  assert.deepEqual(await readGmailCredentials(dir, ACCOUNT), creds);
  await assert.rejects(readGmailCredentials(dir, 'other@example.com'), /run `hookgate webhooks gmail setup` first/);
  await assert.rejects(writeGmailCredentials(dir, '../x@y', creds), /email address/);
});
