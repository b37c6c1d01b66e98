// A fake Slack Web API (chat.postMessage, auth.test) and incoming webhook. The Web API answers HTTP
// 200 with `ok: false` and an error code for a refusal; a 429 carries Retry-After. The webhook
// answers the text "ok", or an error code as text ("no_text", "channel_not_found", …).
import { FakePlatform, type Reply } from './fake-platform.ts';

export function slackLimited(seconds: number): Reply {
  return { status: 429, headers: { 'retry-after': String(seconds) }, body: { ok: false, error: 'ratelimited' } };
}

export function fakeSlack(
  token: string,
  webhookPath = '/services/T000/B000/webhooksecretvalue0123',
): Promise<FakePlatform> {
  let ts = 1700000000;
  return new FakePlatform((a, fake) => {
    if (a.path === webhookPath) {
      if (typeof a.body?.text !== 'string' || !a.body.text) return { status: 400, body: 'no_text' };
      if (fake.overLimit('webhook', 1, 1000, a.at))
        return { status: 429, headers: { 'retry-after': '1' }, body: 'rate_limited' };
      return { status: 200, body: 'ok' };
    }
    if (a.path.startsWith('/services/')) return { status: 404, body: 'no_service' };
    if (a.headers.authorization !== `Bearer ${token}`)
      return { status: 200, body: { ok: false, error: 'invalid_auth' } };
    if (a.path === '/api/auth.test')
      return {
        status: 200,
        body: {
          ok: true,
          url: 'https://example.slack.com/',
          team: 'Example',
          user: 'hooks',
          team_id: 'T1',
          user_id: 'U1',
        },
      };
    if (a.path !== '/api/chat.postMessage') return { status: 200, body: { ok: false, error: 'unknown_method' } };
    const { channel, text } = a.body ?? {};
    if (channel === 'C404') return { status: 200, body: { ok: false, error: 'channel_not_found' } };
    if (typeof text !== 'string' || !text) return { status: 200, body: { ok: false, error: 'no_text' } };
    if (fake.overLimit(`channel:${channel}`, 1, 1000, a.at)) return slackLimited(1);
    ts++;
    return { status: 200, body: { ok: true, channel, ts: `${ts}.000100`, message: { text, ts: `${ts}.000100` } } };
  }).start();
}
