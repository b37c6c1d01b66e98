// Slack: chat.postMessage with a bot token, or an incoming webhook. An answer of HTTP 200 with
// `ok: false` is a failure; Slack's error code is its description. Limits (docs.slack.dev, rate
// limits): chat.postMessage about one message a second per channel, an incoming webhook one a
// second; a 429 carries Retry-After in seconds.

import { exchange, failure, field, isAnswer, str, type Result } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import type { CheckResult, PlatformSender } from './types.ts';

const ONE_PER_SECOND = [{ count: 1, perMs: 1000 }];
/** Errors Slack answers that say "not now" rather than "never". */
const PASSING = new Set(['ratelimited', 'fatal_error', 'internal_error', 'service_unavailable', 'request_timeout']);

export function slackSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (block.has('webhookUrl')) {
    if (block.has('botToken')) block.problems.push(`${block.key}: give botToken or webhookUrl, not both`);
    const url = block.secretUrl('webhookUrl');
    return url === undefined ? undefined : slackWebhook(url, redactor, block.timeoutMs);
  }
  if (!block.has('botToken')) return undefined;
  const token = block.secret('botToken');
  const root = block.apiRoot('https://slack.com');
  const call = async (method: string, body: unknown, signal: AbortSignal): Promise<Result> => {
    const a = await exchange(
      { url: `${root}/api/${method}`, headers: { authorization: `Bearer ${token}` }, body, timeoutMs: block.timeoutMs },
      redactor(),
      signal,
    );
    if (!isAnswer(a)) return a;
    if (a.status === 200 && field(a.json, 'ok') === true) return { kind: 'ok', json: a.json, answer: a };
    const error = str(field(a.json, 'error'));
    if (a.status === 200) {
      const description = redactor().clean(`Slack: ${error ?? 'ok is not true'}`);
      return error !== undefined && PASSING.has(error)
        ? { kind: 'retryable', description, status: 200 }
        : { kind: 'permanent', description, status: 200 };
    }
    return failure(a, redactor(), error);
  };
  return {
    limit: { max: 4000 },
    pacing: { recipient: () => ONE_PER_SECOND, all: [] },
    defaultTo: block.text('defaultTo'),
    needsRecipient: true,
    async send(to, text, signal) {
      const r = await call('chat.postMessage', { channel: to, text }, signal);
      if (r.kind !== 'ok') return r;
      const ts = str(field(r.json, 'ts'));
      return { kind: 'sent', messageIds: ts ? [ts] : [] };
    },
    async check(signal): Promise<CheckResult> {
      const r = await call('auth.test', {}, signal);
      if (r.kind !== 'ok') return { ok: false, detail: r.description };
      return {
        ok: true,
        detail: `bot ${str(field(r.json, 'user')) ?? '?'} in team ${str(field(r.json, 'team')) ?? '?'}`,
      };
    },
  };
}

function slackWebhook(url: string, redactor: () => Redactor, timeoutMs: number): PlatformSender {
  return {
    limit: { max: 4000 },
    pacing: { recipient: () => ONE_PER_SECOND, all: ONE_PER_SECOND },
    needsRecipient: false,
    async send(_to, text, signal) {
      const a = await exchange({ url, body: { text }, timeoutMs }, redactor(), signal);
      if (!isAnswer(a)) return a;
      // The webhook answers the text "ok", and no message id.
      if (a.status === 200) return { kind: 'sent', messageIds: [] };
      return failure(a, redactor(), a.text);
    },
    async check(signal): Promise<CheckResult> {
      // A payload without text posts nothing: a live webhook refuses it with "no_text".
      const a = await exchange({ url, body: {}, timeoutMs }, redactor(), signal);
      if (!isAnswer(a)) return { ok: false, detail: a.description };
      if (a.status === 400 && a.text.trim() === 'no_text')
        return { ok: true, detail: 'incoming webhook answers (the channel it posts to is not shown without posting)' };
      return { ok: false, detail: failure(a, redactor(), a.text).description };
    },
  };
}
