// Telegram Bot API: sendMessage (plain text, no parse mode, so the reply shows as written). The bot
// token sits in the URL path, which is why every answer goes through the redactor. Limits
// (core.telegram.org/bots/faq): about one message a second per chat, 20 a minute in a group
// (negative chat ids), 30 a second in all. A 429 carries parameters.retry_after in seconds.

import { exchange, failure, field, isAnswer, secondsToMs, str, type Result } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import type { CheckResult, PlatformSender, SendOutcome } from './types.ts';

const SECOND = 1000;

export function telegramSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (!block.has('botToken')) return undefined;
  const token = block.secret('botToken');
  const base = `${block.apiRoot('https://api.telegram.org')}/bot${token}`;
  const call = async (method: string, body: unknown, signal: AbortSignal): Promise<Result> => {
    const a = await exchange(
      { url: `${base}/${method}`, method: body === undefined ? 'GET' : 'POST', body, timeoutMs: block.timeoutMs },
      redactor(),
      signal,
    );
    if (!isAnswer(a)) return a;
    if (a.status === 200 && field(a.json, 'ok') === true)
      return { kind: 'ok', json: field(a.json, 'result'), answer: a };
    const retry = secondsToMs(field(field(a.json, 'parameters'), 'retry_after'));
    return failure(a, redactor(), str(field(a.json, 'description')), { ms: retry, scope: 'channel' });
  };
  return {
    limit: { max: 4096 },
    pacing: {
      recipient: (to) =>
        to.startsWith('-')
          ? [
              { count: 1, perMs: SECOND },
              { count: 20, perMs: 60 * SECOND },
            ]
          : [{ count: 1, perMs: SECOND }],
      all: [{ count: 30, perMs: SECOND }],
    },
    defaultTo: block.text('defaultTo'),
    needsRecipient: true,
    async send(to, text, signal): Promise<SendOutcome> {
      const result = await call('sendMessage', { chat_id: to, text }, signal);
      if (result.kind !== 'ok') return result;
      const id = str(field(result.json, 'message_id'));
      return { kind: 'sent', messageIds: id ? [id] : [] };
    },
    async check(signal): Promise<CheckResult> {
      const result = await call('getMe', undefined, signal);
      if (result.kind !== 'ok') return { ok: false, detail: result.description };
      return { ok: true, detail: `bot @${str(field(result.json, 'username')) ?? '?'}` };
    },
  };
}
