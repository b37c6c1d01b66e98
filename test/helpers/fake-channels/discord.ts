// A fake Discord: webhook execute (?wait=true answers the message), GET webhook, and bot channel
// messages with users/@me. Errors are `{ message, code }`; a 429 is `{ message, retry_after,
// global }` with Retry-After and X-RateLimit-* headers, as Discord sends them. It limits a webhook
// to 5 messages per 2 seconds.
import { FakePlatform, type Reply } from './fake-platform.ts';

export function discordLimited(seconds: number, global = false): Reply {
  return {
    status: 429,
    headers: {
      'retry-after': String(Math.ceil(seconds)),
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(Date.now() / 1000 + seconds),
      'x-ratelimit-reset-after': String(seconds),
      'x-ratelimit-bucket': 'abcd1234',
      ...(global ? { 'x-ratelimit-global': 'true', 'x-ratelimit-scope': 'global' } : { 'x-ratelimit-scope': 'user' }),
    },
    body: { message: 'You are being rate limited.', retry_after: seconds, global },
  };
}

export function fakeDiscord(webhookId: string, webhookToken: string, botToken: string): Promise<FakePlatform> {
  let id = 1100000000000000000n;
  const message = (channel: string, content: string) => ({ id: String(++id), type: 0, channel_id: channel, content });
  return new FakePlatform((a, fake) => {
    const hook = /^\/api\/webhooks\/(\d+)\/([^/]+)$/.exec(a.path);
    if (hook) {
      if (hook[1] !== webhookId || hook[2] !== webhookToken)
        return { status: 401, body: { message: 'Invalid Webhook Token', code: 50027 } };
      if (a.method === 'GET')
        return { status: 200, body: { id: webhookId, type: 1, name: 'Hooks', channel_id: '555', guild_id: '777' } };
      const content = a.body?.content;
      if (typeof content !== 'string' || !content)
        return { status: 400, body: { message: 'Cannot send an empty message', code: 50006 } };
      if ([...content].length > 2000)
        return {
          status: 400,
          body: {
            message: 'Invalid Form Body',
            code: 50035,
            errors: {
              content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] },
            },
          },
        };
      if (fake.overLimit('webhook', 5, 2000, a.at)) return discordLimited(1);
      if (a.query.get('wait') !== 'true') return { status: 204 };
      return { status: 200, body: message('555', content) };
    }
    if (a.headers.authorization !== `Bot ${botToken}`)
      return { status: 401, body: { message: '401: Unauthorized', code: 0 } };
    if (a.path === '/api/v10/users/@me') return { status: 200, body: { id: '999', username: 'hooksbot', bot: true } };
    const posted = /^\/api\/v10\/channels\/(\d+)\/messages$/.exec(a.path);
    if (!posted) return { status: 404, body: { message: '404: Not Found', code: 0 } };
    if (posted[1] === '404') return { status: 404, body: { message: 'Unknown Channel', code: 10003 } };
    if (fake.overLimit(`channel:${posted[1]}`, 5, 5000, a.at)) return discordLimited(1);
    return { status: 200, body: message(posted[1]!, a.body?.content) };
  }).start();
}
