// The lockout as the spec has it: every failure from an address counts, repeated or varied (a wrong
// token, no token, a bad signature, a wrong handshake verify token); a rotation forgives the failures
// whose credential the reloaded config accepts, and refuses a retired credential uncounted for
// rotationGraceSeconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { sign as githubSign } from '@octokit/webhooks-methods';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  post,
  type JsonResponse,
  type TestGateway,
  withGateway,
} from '../helpers/recording-host.ts';

const GITHUB_SECRET = 'github-lockout-secret-0123456789';
const VERIFY_TOKEN = 'meta-verify-token-0123456789';
const BODY = { text: 'ping' };

const wake = (gw: TestGateway, token: string | null): Promise<JsonResponse> =>
  post(gw.url, '/hooks/wake', BODY, { token });

function assertStatus(r: JsonResponse, status: number, code?: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  if (code) assert.equal(r.body.code, code);
}

/** Sends the same failing request `n` times; each is refused with `code`. */
async function repeat(n: number, send: () => Promise<JsonResponse>, status: number, code: string): Promise<void> {
  for (let i = 0; i < n; i++) assertStatus(await send(), status, code);
}

test('one wrong token repeated locks at the default maxFailures (20); the right token then gets 429', async () => {
  await withGateway({}, async (gw) => {
    await repeat(20, () => wake(gw, 'the-same-wrong-token'), 401, 'unauthorized');
    for (let i = 20; i < 25; i++) assertStatus(await wake(gw, 'the-same-wrong-token'), 429, 'rate_limited');
    const r = await wake(gw, HOOK_TOKEN);
    assertStatus(r, 429, 'rate_limited');
    assert.equal(r.headers.get('retry-after'), '60');
  });
});

test('no token at all, repeated, locks the same way', async () => {
  await withGateway({}, async (gw) => {
    await repeat(20, () => wake(gw, null), 401, 'unauthorized');
    for (let i = 20; i < 25; i++) assertStatus(await wake(gw, null), 429, 'rate_limited');
    assertStatus(await wake(gw, HOOK_TOKEN), 429, 'rate_limited');
  });
});

test('one bad signature repeated locks the address, for the signed hook and the hook token alike', async () => {
  const mapping = {
    id: 'github',
    match: { path: 'github' },
    action: 'wake',
    textTemplate: 'push {{ref}}',
    verify: { scheme: 'github', secret: GITHUB_SECRET },
  };
  await withGateway({ hooks: { mappings: [mapping] } }, async (gw) => {
    const body = JSON.stringify({ ref: 'main' });
    const forged = await githubSign('not-the-secret', body);
    const send = (signature: string) =>
      post(gw.url, '/hooks/github', undefined, {
        token: null,
        rawBody: body,
        headers: { 'x-hub-signature-256': signature },
      });
    await repeat(20, () => send(forged), 401, 'signature_invalid');
    for (let i = 20; i < 25; i++) assertStatus(await send(forged), 429, 'rate_limited');
    // Locked before any proof is looked at: the right signature and the hook token are refused too.
    assertStatus(await send(await githubSign(GITHUB_SECRET, body)), 429, 'rate_limited');
    assertStatus(await wake(gw, HOOK_TOKEN), 429, 'rate_limited');
  });
});

test('a wrong Meta verify token counts like a wrong token', async () => {
  const mapping = {
    id: 'whatsapp',
    match: { path: 'whatsapp' },
    action: 'wake',
    textTemplate: 'whatsapp',
    handshake: { kind: 'meta', verifyToken: VERIFY_TOKEN },
  };
  await withGateway({ hooks: { mappings: [mapping], authRateLimit: { maxFailures: 5 } } }, async (gw) => {
    const get = (token: string) =>
      post(gw.url, `/hooks/whatsapp?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`, undefined, {
        token: null,
        method: 'GET',
      });
    await repeat(5, () => get('a-wrong-verify-token'), 403, 'handshake_failed');
    assertStatus(await get(VERIFY_TOKEN), 429, 'rate_limited');
  });
});

/** Writes the config with these hook tokens and reloads it, as the watcher would. */
async function rotateTo(gw: TestGateway, tokens: string[], authRateLimit: Record<string, number>): Promise<void> {
  const config = {
    gateway: { auth: { token: GATEWAY_TOKEN } },
    hooks: { enabled: true, token: tokens, authRateLimit },
  };
  await writeFile(gw.configPath, JSON.stringify(config));
  const result = await gw.plugin.reload();
  assert.equal(result.ok, true);
}

test('rotation: failures with the token a reload makes valid are forgiven, and the lock they caused lifted', async () => {
  const limits = { maxFailures: 5, windowSeconds: 60, lockoutSeconds: 3600 };
  await withGateway({ hooks: { authRateLimit: limits } }, async (gw) => {
    // The sender switched a moment early: its new token is refused until the reload, and locks it.
    await repeat(5, () => wake(gw, 'token-of-tomorrow-0123456789'), 401, 'unauthorized');
    assertStatus(await wake(gw, 'token-of-tomorrow-0123456789'), 429, 'rate_limited');
    await rotateTo(gw, ['token-of-tomorrow-0123456789'], limits);
    assertStatus(await wake(gw, 'token-of-tomorrow-0123456789'), 200);
    // Nothing was left on the count: five failures are needed to lock again.
    await repeat(4, () => wake(gw, 'a-guess'), 401, 'unauthorized');
    assertStatus(await wake(gw, 'token-of-tomorrow-0123456789'), 200);
  });
});

test('rotation: a lifted lock leaves its other failures on the count', async () => {
  const limits = { maxFailures: 4, windowSeconds: 60, lockoutSeconds: 3600 };
  await withGateway({ hooks: { authRateLimit: limits } }, async (gw) => {
    await repeat(3, () => wake(gw, 'guess-one'), 401, 'unauthorized');
    await repeat(1, () => wake(gw, 'token-of-tomorrow-0123456789'), 401, 'unauthorized');
    await rotateTo(gw, ['token-of-tomorrow-0123456789'], limits);
    // Locked by 3 guesses and the early token: the reload lifts it, and the guesses still count.
    assertStatus(await wake(gw, 'token-of-tomorrow-0123456789'), 200);
    await repeat(1, () => wake(gw, 'guess-two'), 401, 'unauthorized');
    assertStatus(await wake(gw, 'token-of-tomorrow-0123456789'), 429, 'rate_limited');
  });
});

test('rotation: the retired token is refused but not counted for rotationGraceSeconds; then it counts', async () => {
  const limits = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 3600, rotationGraceSeconds: 1 };
  await withGateway({ hooks: { authRateLimit: limits } }, async (gw) => {
    await rotateTo(gw, ['token-of-tomorrow-0123456789'], limits);
    // The sender keeps the old token a while after the reload.
    await repeat(30, () => wake(gw, HOOK_TOKEN), 401, 'unauthorized');
    assertStatus(await wake(gw, 'token-of-tomorrow-0123456789'), 200);
    // Once the grace is over it is a wrong token like any other (awaited, not slept for a guess).
    const deadline = Date.now() + 10_000;
    let status = 401;
    while (status === 401 && Date.now() < deadline) status = (await wake(gw, HOOK_TOKEN)).status;
    assert.equal(status, 429, 'the retired token locks once its grace is over');
  });
});

test('rotation: a guess is not a retired credential: it counts during the grace period', async () => {
  const limits = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 3600 };
  await withGateway({ hooks: { authRateLimit: limits } }, async (gw) => {
    await rotateTo(gw, ['token-of-tomorrow-0123456789'], limits);
    await repeat(3, () => wake(gw, 'a-guess'), 401, 'unauthorized');
    assertStatus(await wake(gw, 'token-of-tomorrow-0123456789'), 429, 'rate_limited');
  });
});

test('rotation of a bearer mapping secret forgives its sender too', async () => {
  const mapping = (secret: string) => ({
    id: 'alerts',
    match: { path: 'alerts' },
    action: 'wake',
    textTemplate: 'alert',
    verify: { scheme: 'bearer', secret },
  });
  const limits = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 3600 };
  await withGateway({ hooks: { authRateLimit: limits, mappings: [mapping('alerts-old-0123456789')] } }, async (gw) => {
    const send = (secret: string) => post(gw.url, '/hooks/alerts', {}, { token: secret });
    await repeat(3, () => send('alerts-new-0123456789'), 401, 'signature_invalid');
    assertStatus(await send('alerts-new-0123456789'), 429, 'rate_limited');
    const config = {
      gateway: { auth: { token: GATEWAY_TOKEN } },
      hooks: { enabled: true, token: HOOK_TOKEN, authRateLimit: limits, mappings: [mapping('alerts-new-0123456789')] },
    };
    await writeFile(gw.configPath, JSON.stringify(config));
    assert.equal((await gw.plugin.reload()).ok, true);
    assertStatus(await send('alerts-new-0123456789'), 200);
    // The old secret is in its grace period; the hook token is no credential of this mapping's.
    await repeat(5, () => send('alerts-old-0123456789'), 401, 'signature_invalid');
    assertStatus(await send('alerts-new-0123456789'), 200);
  });
});
