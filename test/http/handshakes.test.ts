// Senders that prove the endpoint first (Meta's GET, Slack's url_verification, a generic echo) and a
// mapping's own answer (`respond`), through the real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { sign as hubSign } from '@octokit/webhooks-methods';
import { HOOK_TOKEN, post, type JsonResponse, withGateway } from '../helpers/recording-host.ts';

const APP_SECRET = 'meta-app-secret-0123456789';
const VERIFY_TOKEN = 'meta-verify-token-0123456789';
const SLACK_SECRET = 'slack-signing-secret-0123456789';

const whatsapp = {
  id: 'whatsapp',
  match: { path: 'whatsapp' },
  action: 'wake',
  textTemplate: 'WhatsApp from {{entry[0].changes[0].value.messages[0].from}}',
  handshake: { kind: 'meta', verifyToken: VERIFY_TOKEN },
  // Meta signs deliveries with the app secret, as GitHub does: X-Hub-Signature-256: sha256=<hex>.
  verify: { scheme: 'hmac', header: 'X-Hub-Signature-256', prefix: 'sha256=', secret: APP_SECRET },
};

function assertStatus(r: JsonResponse, status: number, code?: string): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  if (code) assert.equal(r.body.code, code);
}

const get = (url: string, p: string, method = 'GET') => post(url, p, undefined, { token: null, method });
const subscribe = (token: string, challenge = '1158201444') =>
  `/hooks/whatsapp?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=${challenge}`;

test('Meta: the GET handshake echoes hub.challenge as text for the right verify token, 403 otherwise', async () => {
  await withGateway({ hooks: { mappings: [whatsapp] } }, async (gw) => {
    const ok = await get(gw.url, subscribe(VERIFY_TOKEN));
    assert.equal(ok.status, 200);
    assert.equal(ok.body, '1158201444');
    assert.equal(ok.headers.get('content-type'), 'text/plain; charset=utf-8');

    assertStatus(await get(gw.url, subscribe('not-the-token')), 403, 'handshake_failed');
    assertStatus(await get(gw.url, '/hooks/whatsapp?hub.mode=subscribe&hub.challenge=1'), 403, 'handshake_failed');
    // The right token with another mode or no challenge: refused, not counted (see lockout.test.ts).
    assertStatus(
      await get(gw.url, `/hooks/whatsapp?hub.mode=unsubscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1`),
      403,
      'handshake_failed',
    );
    // The query token rule comes first, and only the meta mapping takes GET.
    assertStatus(await get(gw.url, `${subscribe(VERIFY_TOKEN)}&token=${HOOK_TOKEN}`), 400, 'token_in_query');
    const put = await get(gw.url, subscribe(VERIFY_TOKEN), 'PUT');
    assertStatus(put, 405, 'method_not_allowed');
    assert.equal(put.headers.get('allow'), 'GET, POST');
    const wake = await get(gw.url, '/hooks/wake');
    assertStatus(wake, 405, 'method_not_allowed');
    assert.equal(wake.headers.get('allow'), 'POST');
    assert.equal(gw.rec.events.length, 0, 'a handshake acts on nothing');
    // A log line never carries the verify token or the challenge.
    assert.ok(!JSON.stringify(gw.rec.logs).includes(VERIFY_TOKEN));
  });
});

test('Meta: a delivery signed with the app secret is acted on; the verify token is no credential for it', async () => {
  await withGateway({ hooks: { mappings: [whatsapp] } }, async (gw) => {
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ changes: [{ value: { messages: [{ from: '15551234567', text: { body: 'hi' } }] } }] }],
    });
    const signed = await post(gw.url, '/hooks/whatsapp', undefined, {
      token: null,
      rawBody: body,
      headers: { 'x-hub-signature-256': await hubSign(APP_SECRET, body) },
    });
    assertStatus(signed, 200);
    assert.match(gw.rec.events[0]!.text, /WhatsApp from 15551234567/);
    const unsigned = await post(gw.url, '/hooks/whatsapp', undefined, { token: VERIFY_TOKEN, rawBody: body });
    assertStatus(unsigned, 401, 'signature_invalid');
  });
});

/** Signs a body as Slack does: v0=hex(HMAC-SHA256(secret, "v0:<ts>:<body>")). */
function slackHeaders(body: string, secret = SLACK_SECRET, ts = Math.floor(Date.now() / 1000)): Record<string, string> {
  const sig = createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex');
  return { 'x-slack-signature': `v0=${sig}`, 'x-slack-request-timestamp': String(ts) };
}

const slackEvents = {
  id: 'slack-events',
  match: { path: 'slack-events' },
  action: 'wake',
  textTemplate: 'Slack {{event.type}}: {{event.text}}',
  handshake: { kind: 'slack' },
  verify: { scheme: 'slack', secret: SLACK_SECRET },
};

test('Slack Events: a signed url_verification is answered with its challenge and acts on nothing', async () => {
  await withGateway({ hooks: { mappings: [slackEvents] } }, async (gw) => {
    const body = JSON.stringify({
      token: 'legacy',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const r = await post(gw.url, '/hooks/slack-events', undefined, {
      token: null,
      rawBody: body,
      headers: slackHeaders(body),
    });
    assertStatus(r, 200);
    assert.deepEqual(r.body, { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    const forged = await post(gw.url, '/hooks/slack-events', undefined, {
      token: null,
      rawBody: body,
      headers: slackHeaders(body, 'another-secret'),
    });
    assertStatus(forged, 401, 'signature_invalid');
    const noChallenge = JSON.stringify({ type: 'url_verification' });
    const bad = await post(gw.url, '/hooks/slack-events', undefined, {
      token: null,
      rawBody: noChallenge,
      headers: slackHeaders(noChallenge),
    });
    assertStatus(bad, 400, 'invalid_payload');
    assert.equal(gw.rec.events.length, 0);

    const event = JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev1',
      event: { type: 'message', text: 'deploy done' },
    });
    const acted = await post(gw.url, '/hooks/slack-events', undefined, {
      token: null,
      rawBody: event,
      headers: slackHeaders(event),
    });
    assertStatus(acted, 200);
    assert.match(gw.rec.events[0]!.text, /Slack message: deploy done/);
  });
});

test('echo: a verified body matching `when` gets its challenge back; others are deliveries', async () => {
  const mapping = {
    id: 'zoom',
    match: { path: 'zoom' },
    action: 'wake',
    textTemplate: 'Zoom {{event}}',
    verify: { scheme: 'hmac', header: 'x-signature', secret: 'echo-secret-0123456789' },
    handshake: {
      kind: 'echo',
      when: { path: 'event', equals: 'endpoint.url_validation' },
      challenge: 'payload.payload.plainToken',
    },
  };
  await withGateway({ hooks: { mappings: [mapping] } }, async (gw) => {
    const send = (payload: unknown) => {
      const body = JSON.stringify(payload);
      const sig = createHmac('sha256', 'echo-secret-0123456789').update(body).digest('hex');
      return post(gw.url, '/hooks/zoom', undefined, { token: null, rawBody: body, headers: { 'x-signature': sig } });
    };
    const r = await send({ event: 'endpoint.url_validation', payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' } });
    assertStatus(r, 200);
    assert.deepEqual(r.body, { challenge: 'qgg8vlvZRS6UYooatFL8Aw' });
    assert.equal(gw.rec.events.length, 0);
    assertStatus(await send({ event: 'meeting.started' }), 200);
    assert.equal(gw.rec.events[0]!.text.includes('Zoom meeting.started'), true);
  });
});

test('respond: a slash command is answered 200 with its text (a template), JSON sent as it is', async () => {
  const command = {
    id: 'slack-command',
    match: { path: 'slack-command' },
    action: 'agent',
    body: 'form',
    messageTemplate: '{{user_name}} asks: {{text}}',
    verify: { scheme: 'slack', secret: SLACK_SECRET },
    respond: { status: 200, body: 'On it, {{user_name}}.' },
  };
  const json = {
    id: 'ci',
    match: { path: 'ci' },
    action: 'wake',
    textTemplate: 'ci {{status}}',
    respond: { status: 202, body: { received: true } },
  };
  await withGateway({ hooks: { mappings: [command, json] } }, async (gw) => {
    const form = new URLSearchParams({ command: '/ask', text: 'the secret plan', user_name: 'alice' }).toString();
    const r = await post(gw.url, '/hooks/slack-command', undefined, {
      token: null,
      rawBody: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...slackHeaders(form) },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(r.body, 'On it, alice.', 'only what the template asks for: not the command text');
    await gw.finalRuns(1);
    assert.match(gw.rec.turns[0]!.prompt, /alice asks: the secret plan/);

    const ci = await post(gw.url, '/hooks/ci', { status: 'green' });
    assertStatus(ci, 202);
    assert.deepEqual(ci.body, { received: true });
    // Refusals keep their own answers.
    assertStatus(await post(gw.url, '/hooks/ci', { status: 'green' }, { token: 'wrong' }), 401, 'unauthorized');
  });
});

test('handshake and respond problems stop the config with the key named', async () => {
  const { startTestGateway } = await import('../helpers/recording-host.ts');
  const bad = [
    [
      { id: 'm', match: { path: 'm' }, action: 'wake', textTemplate: 'x', handshake: { kind: 'meta' } },
      /handshake.verifyToken is required/,
    ],
    [
      { id: 's', match: { path: 's' }, action: 'wake', textTemplate: 'x', handshake: { kind: 'slack' } },
      /needs the mapping's verify/,
    ],
    [
      { id: 'e', action: 'wake', textTemplate: 'x', handshake: { kind: 'meta', verifyToken: 'v-0123456789' } },
      /needs match.path/,
    ],
    [
      // A verify token is a shared secret like any other: 16 bytes at least (`Ab` would be guessed).
      {
        id: 'w',
        match: { path: 'w' },
        action: 'wake',
        textTemplate: 'x',
        handshake: { kind: 'meta', verifyToken: 'Ab' },
      },
      /hooks\.mappings\[0\] \(id "w"\)\.handshake\.verifyToken must be at least 16 bytes/,
    ],
    [
      { id: 'p', match: { path: 'p' }, action: 'wake', textTemplate: 'x', maxParts: 3 },
      /maxParts needs body "multipart"/,
    ],
    [
      { id: 'r', match: { path: 'r' }, action: 'wake', textTemplate: 'x', respond: { status: 201 } },
      /respond.status must be one of: 200, 202/,
    ],
  ] as const;
  for (const [mapping, message] of bad) {
    await assert.rejects(startTestGateway({ hooks: { mappings: [mapping] } }), message);
  }
});
