// Mattermost: POST /api/v4/posts with a personal access or bot token, or an incoming webhook.
// Errors are `{ id, message, detailed_error, request_id, status_code }`. The server's own rate
// limit (RateLimitSettings, off by default, 10 requests a second when on) answers 429 with
// X-Ratelimit-Reset in seconds: we pace below it.

import { call, failure, field, secondsToMs, str, type Result } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import type { CheckResult, PlatformSender } from './types.ts';

const PACING = { recipient: () => [], all: [{ count: 10, perMs: 1000 }] };
const LIMIT = { max: 16383 };

export function mattermostSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (block.has('webhookUrl')) {
    if (block.has('token')) block.problems.push(`${block.key}: give url and token, or webhookUrl, not both`);
    const url = block.secretUrl('webhookUrl');
    if (url === undefined) return undefined;
    return {
      limit: LIMIT,
      pacing: PACING,
      defaultTo: block.text('defaultTo'),
      needsRecipient: false,
      async send(to, text, signal) {
        // A webhook may post elsewhere than its own channel when it is allowed to: `to` names it.
        const r = await mattermostCall(
          url,
          {},
          { body: to ? { text, channel: to } : { text }, timeoutMs: block.timeoutMs },
          redactor,
          signal,
        );
        return r.kind === 'ok' ? { kind: 'sent', messageIds: [] } : r;
      },
      check: () =>
        Promise.resolve({
          ok: true,
          unverifiable: true,
          detail: 'incoming webhook: cannot be checked without posting (send a test with `hookgate channels send`)',
        }),
    };
  }
  if (!block.has('token')) return undefined;
  const root = block.url('url', block.text('url', true));
  const token = block.secret('token');
  const auth = { authorization: `Bearer ${token}` };
  return {
    limit: LIMIT,
    pacing: PACING,
    defaultTo: block.text('defaultTo'),
    needsRecipient: true,
    async send(to, text, signal) {
      const r = await mattermostCall(
        `${root}/api/v4/posts`,
        auth,
        { body: { channel_id: to, message: text }, timeoutMs: block.timeoutMs },
        redactor,
        signal,
      );
      if (r.kind !== 'ok') return r;
      const id = str(field(r.json, 'id'));
      return { kind: 'sent', messageIds: id ? [id] : [] };
    },
    async check(signal): Promise<CheckResult> {
      const r = await mattermostCall(
        `${root}/api/v4/users/me`,
        auth,
        { method: 'GET', timeoutMs: block.timeoutMs },
        redactor,
        signal,
      );
      if (r.kind !== 'ok') return { ok: false, detail: r.description };
      return { ok: true, detail: `user @${str(field(r.json, 'username')) ?? '?'}` };
    },
  };
}

async function mattermostCall(
  url: string,
  headers: Record<string, string>,
  req: { method?: 'GET'; body?: unknown; timeoutMs: number },
  redactor: () => Redactor,
  signal: AbortSignal,
): Promise<Result> {
  return call({ url, headers, ...req }, redactor(), signal, (a) => {
    const reset = a.headers.get('x-ratelimit-reset');
    const wait = a.headers.has('retry-after') || reset === null ? undefined : secondsToMs(Number(reset));
    return failure(a, redactor(), str(field(a.json, 'message')), { ms: wait, scope: 'channel' });
  });
}
