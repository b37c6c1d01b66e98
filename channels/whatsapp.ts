// WhatsApp Cloud API: POST /<version>/<phone number id>/messages with a text message. The answer
// carries `messages[0].id` (a wamid); errors are the Graph API's `{ error: { message, type, code,
// error_data: { details }, fbtrace_id } }`. Limits (developers.facebook.com, throughput and pair
// rate): 80 messages a second per business number, and one message every 6 seconds to one user.
// Codes 130429 and 131056 (and the Graph API's 4, 80007) are rate limits, retried after a wait.

import { call, failure, field, retryAfterMs, str, type Answer, type Failed, type Result } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import type { CheckResult, PlatformSender } from './types.ts';

const RATE_LIMIT_CODES = new Set(['4', '80007', '130429', '131056']);
/** Meta announces no wait with a rate limit; the pair rate's own period is the least to wait. */
const RATE_LIMIT_WAIT_MS = 6000;

export function whatsappSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (!block.has('accessToken') && block.raw.phoneNumberId === undefined) return undefined;
  const token = block.secret('accessToken');
  const phoneNumberId = block.text('phoneNumberId', true);
  const version = block.text('apiVersion') ?? 'v23.0';
  const base = `${block.apiRoot('https://graph.facebook.com')}/${version}/${encodeURIComponent(phoneNumberId ?? '')}`;
  const auth = { authorization: `Bearer ${token}` };
  const graphCall = (url: string, body: unknown, signal: AbortSignal): Promise<Result> =>
    call(
      { url, headers: auth, method: body === undefined ? 'GET' : 'POST', body, timeoutMs: block.timeoutMs },
      redactor(),
      signal,
      (a) => graphFailure(a, redactor()),
    );
  return {
    limit: { max: 4096 },
    pacing: { recipient: () => [{ count: 1, perMs: 6000 }], all: [{ count: 80, perMs: 1000 }] },
    defaultTo: block.text('defaultTo'),
    needsRecipient: true,
    async send(to, text, signal) {
      const r = await graphCall(
        `${base}/messages`,
        {
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to,
          type: 'text',
          text: { body: text, preview_url: false },
        },
        signal,
      );
      if (r.kind !== 'ok') return r;
      const messages = field(r.json, 'messages');
      const ids = Array.isArray(messages)
        ? messages.map((m) => str(field(m, 'id'))).filter((id) => id !== undefined)
        : [];
      return { kind: 'sent', messageIds: ids };
    },
    async check(signal): Promise<CheckResult> {
      const r = await graphCall(`${base}?fields=display_phone_number,verified_name`, undefined, signal);
      if (r.kind !== 'ok') return { ok: false, detail: r.description };
      return {
        ok: true,
        detail: `number ${str(field(r.json, 'display_phone_number')) ?? '?'} (${str(field(r.json, 'verified_name')) ?? '?'})`,
      };
    },
  };
}

function graphFailure(a: Answer, redactor: Redactor): Failed {
  const error = field(a.json, 'error');
  const code = str(field(error, 'code'));
  const message = str(field(error, 'message'));
  const details = str(field(field(error, 'error_data'), 'details'));
  const said = message === undefined ? undefined : details && details !== message ? `${message}: ${details}` : message;
  const described = code ? `${said ?? 'error'} (code ${code})` : said;
  if (code !== undefined && RATE_LIMIT_CODES.has(code)) {
    const scope = code === '131056' ? ('recipient' as const) : ('channel' as const);
    const waitMs = retryAfterMs(a.headers) ?? RATE_LIMIT_WAIT_MS;
    return {
      kind: 'retryable' as const,
      description: `HTTP ${a.status}: ${redactor.clean(described ?? '')}`,
      status: a.status,
      waitMs,
      scope,
    };
  }
  return failure(a, redactor, described);
}
