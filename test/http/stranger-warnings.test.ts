// Warnings a stranger can cause are rate-limited: refused Gmail pushes (no token, or a token whose
// keys cannot be fetched) and lockouts from many addresses. Each message gets its first lines each
// second; the rest are counted and reported in a summary line, so every refusal is accounted for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LogFields, Logger } from '../../plugin/host.ts';
import { GoogleCerts } from '../../gmail/google-certs.ts';
import { startPushServer } from '../../gmail/push-server.ts';
import { LimitedWarnings, WARNINGS_LOGGED_PER_SECOND } from '../../plugin/observe/limited-warnings.ts';
import { post, withGateway } from '../helpers/recording-host.ts';

interface Line {
  level: string;
  msg: string;
  fields?: LogFields;
}

function recordingLogger(lines: Line[]): Logger {
  return {
    info: (msg, fields) => lines.push({ level: 'info', msg, fields }),
    warn: (msg, fields) => lines.push({ level: 'warn', msg, fields }),
    error: (msg, fields) => lines.push({ level: 'error', msg, fields }),
  };
}

/** Lines of `msg` logged one by one, plus those counted in summaries: every occurrence, once. */
function accountedFor(lines: Line[], msg: string): { oneByOne: number; total: number } {
  const oneByOne = lines.filter((l) => l.msg === msg).length;
  const counted = lines
    .filter((l) => l.msg === 'warnings counted, not logged one by one' && l.fields?.warning === msg)
    .reduce((sum, l) => sum + Number(l.fields?.count), 0);
  return { oneByOne, total: oneByOne + counted };
}

const second = (): number => Math.floor(Date.now() / 1000);

test('warnings: the first few per message each second, the rest counted in one summary per message', () => {
  const lines: Line[] = [];
  let now = 5_000;
  const w = new LimitedWarnings(recordingLogger(lines), () => now);
  for (let i = 0; i < 25; i++) w.warn('a');
  for (let i = 0; i < 3; i++) w.warn('b');
  w.info('passes');
  // A report in the middle of a second does not renew that second's budget.
  w.flush();
  w.warn('a');
  now += 1000;
  for (let i = 0; i < 12; i++) w.warn('a');
  w.flush();
  assert.equal(lines.filter((l) => l.msg === 'a').length, 2 * WARNINGS_LOGGED_PER_SECOND);
  assert.equal(lines.filter((l) => l.msg === 'b').length, 3);
  assert.equal(accountedFor(lines, 'a').total, 38);
  assert.equal(lines.filter((l) => l.msg === 'passes').length, 1);
});

test('gmail push: a flood of refused pushes is counted, not logged one line each', async () => {
  const lines: Line[] = [];
  const server = await startPushServer({
    bind: '127.0.0.1',
    port: 0,
    path: '/gmail-pubsub',
    audience: 'https://example.com/gmail-pubsub',
    serviceAccount: undefined,
    account: 'me@example.com',
    // Nothing listens there: a token with a key id makes the keys unreachable.
    certs: new GoogleCerts('http://127.0.0.1:9/certs'),
    logger: recordingLogger(lines),
    onNotification: () => Promise.resolve(),
  });
  const b64 = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = `${b64({ alg: 'RS256', kid: 'k1' })}.${b64({ iss: 'accounts.google.com' })}.c2ln`;
  const from = second();
  try {
    for (let i = 0; i < 200; i++) {
      const r = await fetch(server.url, { method: 'POST', body: '{}' });
      assert.equal(r.status, 401);
    }
    for (let i = 0; i < 30; i++) {
      const r = await fetch(server.url, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${jwt}` } });
      assert.equal(r.status, 503);
    }
  } finally {
    await server.close();
  }
  const seconds = second() - from + 1;
  const refused = accountedFor(lines, 'gmail push refused');
  assert.equal(refused.total, 200, 'every refusal is accounted for');
  assert.ok(refused.oneByOne <= WARNINGS_LOGGED_PER_SECOND * seconds, `${refused.oneByOne} lines in ${seconds} s`);
  const unchecked = accountedFor(lines, 'gmail push: cannot check the token now');
  assert.equal(unchecked.total, 30);
  assert.ok(unchecked.oneByOne <= WARNINGS_LOGGED_PER_SECOND * seconds);
});

test('lockouts of many addresses are logged within the same budget', async () => {
  await withGateway(
    {
      gateway: { trustedProxies: ['127.0.0.1'] },
      hooks: { authRateLimit: { maxFailures: 1, windowSeconds: 60, lockoutSeconds: 60 } },
    },
    async (gw) => {
      const from = second();
      for (let i = 0; i < 60; i++) {
        const r = await post(
          gw.url,
          '/hooks/wake',
          { text: 'x' },
          {
            token: 'wrong-token',
            headers: { 'x-forwarded-for': `203.0.113.${i + 1}` },
          },
        );
        assert.equal(r.status, 401);
      }
      await gw.plugin.close();
      const seconds = second() - from + 1;
      const lines = gw.rec.logs.map((l) => ({ level: l.level, msg: l.msg, fields: l.fields }));
      const locked = accountedFor(lines, 'client address locked after repeated authentication failures');
      assert.equal(locked.total, 60);
      assert.ok(locked.oneByOne <= WARNINGS_LOGGED_PER_SECOND * seconds, `${locked.oneByOne} lines in ${seconds} s`);
    },
  );
});
