// The Bot API as OpenClaw's Telegram channel uses it, for a fake platform (FakePlatform of
// test/helpers/fake-channels/): getMe and polling at start, then sendMessage; one chat's sends are
// answered 500, for the suites that need a send that keeps failing.
import type { Arrival, Reply } from '../test/helpers/fake-channels/fake-platform.ts';

export const INTERNAL_ERROR: Reply = {
  status: 500,
  body: { ok: false, error_code: 500, description: 'Internal Server Error' },
};

/** Answers for the bot `botToken`; sends to `brokenChat` get a 500. */
export function botApi(botToken: string, brokenChat: string): (a: Arrival) => Reply {
  return (a) => {
    const method = /^\/bot([^/]+)\/(\w+)$/.exec(a.path);
    if (method?.[1] !== botToken)
      return { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } };
    switch (method[2]) {
      case 'getMe':
        return {
          status: 200,
          body: { ok: true, result: { id: 98, is_bot: true, first_name: 'Hooks', username: 'hooks_bot' } },
        };
      case 'getUpdates':
        return { status: 200, body: { ok: true, result: [] } };
      case 'sendMessage': {
        const chat = String(a.body?.chat_id);
        if (chat === brokenChat) return INTERNAL_ERROR;
        const message = {
          message_id: a.at,
          date: Math.floor(a.at / 1000),
          chat: { id: Number(chat), type: 'private' },
        };
        return { status: 200, body: { ok: true, result: { ...message, text: a.body?.text } } };
      }
      default:
        // deleteWebhook, setMyCommands and the like at start.
        return { status: 200, body: { ok: true, result: true } };
    }
  };
}
