// A fake Telegram Bot API (core.telegram.org/bots/api): /bot<token>/<method>, answers
// `{ ok: true, result }`, errors `{ ok: false, error_code, description }`, and a 429 with
// `parameters.retry_after`. It limits like Telegram: one message a second per chat.
import { FakePlatform, type Reply } from './fake-platform.ts';

export function tooManyRequests(seconds: number): Reply {
  return {
    status: 429,
    body: {
      ok: false,
      error_code: 429,
      description: `Too Many Requests: retry after ${seconds}`,
      parameters: { retry_after: seconds },
    },
  };
}

export function fakeTelegram(token: string): Promise<FakePlatform> {
  let nextId = 1;
  return new FakePlatform((a, fake) => {
    const m = /^\/bot([^/]+)\/(\w+)$/.exec(a.path);
    if (!m) return { status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } };
    if (m[1] !== token) return { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } };
    if (m[2] === 'getMe')
      return {
        status: 200,
        body: { ok: true, result: { id: 42, is_bot: true, first_name: 'Hooks', username: 'hooks_bot' } },
      };
    if (m[2] !== 'sendMessage') return { status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } };
    const { chat_id: chat, text } = a.body ?? {};
    if (typeof text !== 'string' || text.length === 0)
      return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: message text is empty' } };
    if ([...text].length > 4096)
      return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: message is too long' } };
    if (String(chat) === '404')
      return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: chat not found' } };
    if (fake.overLimit(`chat:${chat}`, 1, 1000, a.at) || fake.overLimit('all', 30, 1000, a.at))
      return tooManyRequests(1);
    return {
      status: 200,
      body: {
        ok: true,
        result: {
          message_id: nextId++,
          date: Math.floor(a.at / 1000),
          chat: { id: Number(chat), type: 'private' },
          text,
        },
      },
    };
  }).start();
}
