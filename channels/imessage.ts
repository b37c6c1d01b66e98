// iMessage through a BlueBubbles server: POST /api/v1/message/text with the chat's guid. The
// server password goes in the query string (BlueBubbles' own scheme), so every answer is redacted.
// Answers are `{ status, message, data }`, errors `{ status, message, error: { type, message } }`.
// Apple publishes no rate; we send one message a second per chat.

import { randomUUID } from 'node:crypto';
import { call, failure, field, str, type Result } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import type { CheckResult, PlatformSender } from './types.ts';

export function imessageSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (block.raw.url === undefined && !block.has('password')) return undefined;
  const root = block.url('url', block.text('url', true));
  const password = block.secret('password');
  const serverCall = (path: string, body: unknown, signal: AbortSignal): Promise<Result> => {
    const url = `${root}${path}?password=${encodeURIComponent(password ?? '')}`;
    const req = {
      url,
      method: body === undefined ? ('GET' as const) : ('POST' as const),
      body,
      timeoutMs: block.timeoutMs,
    };
    return call(req, redactor(), signal, (a) => {
      const message = str(field(a.json, 'message'));
      const inner = str(field(field(a.json, 'error'), 'message'));
      return failure(a, redactor(), inner && inner !== message ? `${message ?? 'error'}: ${inner}` : message);
    });
  };
  return {
    limit: { max: 4000 },
    pacing: { recipient: () => [{ count: 1, perMs: 1000 }], all: [] },
    defaultTo: block.text('defaultTo'),
    needsRecipient: true,
    async send(to, text, signal) {
      const r = await serverCall(
        '/api/v1/message/text',
        { chatGuid: to, tempGuid: randomUUID(), message: text, method: 'apple-script' },
        signal,
      );
      if (r.kind !== 'ok') return r;
      const guid = str(field(field(r.json, 'data'), 'guid'));
      return { kind: 'sent', messageIds: guid ? [guid] : [] };
    },
    async check(signal): Promise<CheckResult> {
      const r = await serverCall('/api/v1/server/info', undefined, signal);
      if (r.kind !== 'ok') return { ok: false, detail: r.description };
      const data = field(r.json, 'data');
      return {
        ok: true,
        detail: `BlueBubbles ${str(field(data, 'server_version')) ?? '?'} on macOS ${str(field(data, 'os_version')) ?? '?'}`,
      };
    },
  };
}
