// Discord: a webhook executed with ?wait=true (so the answer is the message, with its id), or a bot
// posting to a channel. Errors are `{ message, code }`; a 429 is `{ message, retry_after, global }`
// with Retry-After and X-RateLimit-* headers. Limits (discord.com/developers, rate limits): a
// webhook takes 5 messages per 2 seconds and 30 a minute; a bot 5 per 5 seconds per channel and 50
// a second in all.

import { call, failure, field, secondsToMs, str, type Answer, type Result } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import type { CheckResult, PlatformSender } from './types.ts';

const API = '/api/v10';

export function discordSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (block.has('webhookUrl')) {
    if (block.has('botToken')) block.problems.push(`${block.key}: give webhookUrl or botToken, not both`);
    const url = block.secretUrl('webhookUrl');
    if (url === undefined) return undefined;
    const call = (req: { method?: 'GET'; body?: unknown; query?: string }, signal: AbortSignal) =>
      discordCall(`${url}${req.query ?? ''}`, {}, { ...req, timeoutMs: block.timeoutMs }, redactor, signal);
    return {
      limit: { max: 2000 },
      pacing: {
        recipient: () => [],
        all: [
          { count: 5, perMs: 2000 },
          { count: 30, perMs: 60_000 },
        ],
      },
      needsRecipient: false,
      async send(_to, text, signal) {
        const r = await call({ body: { content: text, allowed_mentions: { parse: [] } }, query: '?wait=true' }, signal);
        return r.kind === 'ok' ? sentIds(r) : r;
      },
      async check(signal): Promise<CheckResult> {
        const r = await call({ method: 'GET' }, signal);
        if (r.kind !== 'ok') return { ok: false, detail: r.description };
        return {
          ok: true,
          detail: `webhook "${str(field(r.json, 'name')) ?? '?'}" for channel ${str(field(r.json, 'channel_id')) ?? '?'}`,
        };
      },
    };
  }
  if (!block.has('botToken')) return undefined;
  const token = block.secret('botToken');
  const root = `${block.apiRoot('https://discord.com')}${API}`;
  const auth = { authorization: `Bot ${token}` };
  return {
    limit: { max: 2000 },
    pacing: { recipient: () => [{ count: 5, perMs: 5000 }], all: [{ count: 50, perMs: 1000 }] },
    defaultTo: block.text('defaultTo'),
    needsRecipient: true,
    async send(to, text, signal) {
      const r = await discordCall(
        `${root}/channels/${encodeURIComponent(to)}/messages`,
        auth,
        { body: { content: text, allowed_mentions: { parse: [] } }, timeoutMs: block.timeoutMs },
        redactor,
        signal,
      );
      return r.kind === 'ok' ? sentIds(r) : r;
    },
    async check(signal): Promise<CheckResult> {
      const r = await discordCall(
        `${root}/users/@me`,
        auth,
        { method: 'GET', timeoutMs: block.timeoutMs },
        redactor,
        signal,
      );
      if (r.kind !== 'ok') return { ok: false, detail: r.description };
      return { ok: true, detail: `bot ${str(field(r.json, 'username')) ?? '?'}` };
    },
  };
}

async function discordCall(
  url: string,
  headers: Record<string, string>,
  req: { method?: 'GET'; body?: unknown; timeoutMs: number },
  redactor: () => Redactor,
  signal: AbortSignal,
): Promise<Result> {
  return call({ url, headers, method: req.method, body: req.body, timeoutMs: req.timeoutMs }, redactor(), signal, (a) =>
    failure(a, redactor(), describe(a), {
      ms: secondsToMs(field(a.json, 'retry_after')),
      scope: field(a.json, 'global') === true ? 'channel' : 'recipient',
    }),
  );
}

function describe(a: Answer): string | undefined {
  const message = str(field(a.json, 'message'));
  const code = str(field(a.json, 'code'));
  return message === undefined ? undefined : code ? `${message} (code ${code})` : message;
}

function sentIds(r: { json: unknown }): { kind: 'sent'; messageIds: string[] } {
  const id = str(field(r.json, 'id'));
  return { kind: 'sent', messageIds: id ? [id] : [] };
}
