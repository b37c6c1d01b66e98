// Microsoft Teams: a Workflows (Power Automate) webhook posting an Adaptive Card with the text. The
// webhook answers 202 and no message id. Limits (learn.microsoft.com, incoming webhooks): a message
// of at most about 28 KB, and no more than four requests a second.

import { exchange, failure, field, isAnswer, str } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import { jsonUtf8Weight } from './split.ts';
import type { PlatformSender } from './types.ts';

function card(text: string): unknown {
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [{ type: 'TextBlock', text, wrap: true }],
        },
      },
    ],
  };
}

/** 28 KB less the card around the text, less a margin for what Teams wraps it in. */
const TEXT_BYTES = 28 * 1024 - Buffer.byteLength(JSON.stringify(card(''))) - 1024;

export function msteamsSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (!block.has('webhookUrl')) return undefined;
  const url = block.secretUrl('webhookUrl');
  if (url === undefined) return undefined;
  return {
    limit: { max: TEXT_BYTES, weight: jsonUtf8Weight },
    pacing: { recipient: () => [], all: [{ count: 4, perMs: 1000 }] },
    needsRecipient: false,
    async send(_to, text, signal) {
      const a = await exchange({ url, body: card(text), timeoutMs: block.timeoutMs }, redactor(), signal);
      if (!isAnswer(a)) return a;
      if (a.status >= 200 && a.status < 300) return { kind: 'sent', messageIds: [] };
      const error = field(a.json, 'error');
      const said = str(field(error, 'message'));
      const code = str(field(error, 'code'));
      return failure(a, redactor(), said && code ? `${code}: ${said}` : (said ?? a.text));
    },
    check: () =>
      Promise.resolve({
        ok: true,
        unverifiable: true,
        detail: 'Workflows webhook: cannot be checked without posting (send a test with `hookgate channels send`)',
      }),
  };
}
