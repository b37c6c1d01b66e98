// Signal through signal-cli-rest-api (github.com/bbernhard/signal-cli-rest-api): POST /v2/send
// answers 201 `{ timestamp }`, which is the message's id on Signal; errors are `{ error }`, and a
// rate limit is a 429 with `challenge_tokens`. Signal publishes no rate; we send one message a
// second per recipient, as its own clients do.

import { call, failure, field, str, type Result } from './http.ts';
import type { Redactor } from './redact.ts';
import type { ChannelBlock } from './settings.ts';
import type { CheckResult, PlatformSender } from './types.ts';

export function signalSender(block: ChannelBlock, redactor: () => Redactor): PlatformSender | undefined {
  if (block.raw.url === undefined && block.raw.number === undefined) return undefined;
  const root = block.url('url', block.text('url', true));
  const number = block.text('number', true);
  const signalCall = (path: string, body: unknown, signal: AbortSignal): Promise<Result> =>
    call(
      { url: `${root}${path}`, method: body === undefined ? 'GET' : 'POST', body, timeoutMs: block.timeoutMs },
      redactor(),
      signal,
      (a) => failure(a, redactor(), str(field(a.json, 'error'))),
    );
  return {
    limit: { max: 2000 },
    pacing: { recipient: () => [{ count: 1, perMs: 1000 }], all: [] },
    defaultTo: block.text('defaultTo'),
    needsRecipient: true,
    async send(to, text, signal) {
      const r = await signalCall('/v2/send', { message: text, number, recipients: [to] }, signal);
      if (r.kind !== 'ok') return r;
      const ts = str(field(r.json, 'timestamp'));
      return { kind: 'sent', messageIds: ts ? [ts] : [] };
    },
    async check(signal): Promise<CheckResult> {
      const about = await signalCall('/v1/about', undefined, signal);
      if (about.kind !== 'ok') return { ok: false, detail: about.description };
      const accounts = await signalCall('/v1/accounts', undefined, signal);
      if (accounts.kind !== 'ok') return { ok: false, detail: accounts.description };
      const list = Array.isArray(accounts.json) ? accounts.json : [];
      const version = str(field(about.json, 'version')) ?? '?';
      return list.includes(number)
        ? { ok: true, detail: `signal-cli-rest-api ${version}, ${number} registered` }
        : { ok: false, detail: `signal-cli-rest-api ${version} answers, but ${number} is not one of its accounts` };
    },
  };
}
