// Posts messages to <hooks.path>/gmail with the hook token, in batches that fit the hook's body limit.
// A 413 splits the batch in halves, down to single messages (a single one is then sent without its
// body); nothing is posted twice in a row and nothing loops. Any other failure is thrown for the
// watcher to retry later: the caller moves its cursor only when every batch was answered 2xx. Each
// request is bounded from its start to the answer's last byte (timeoutMs, default 60 s).
import type { HookMessage } from './message-to-text.ts';
import { boundedFetch } from '../plugin/util/bounded-fetch.ts';

export interface HookTarget {
  /** The full URL of the gmail hook, e.g. http://127.0.0.1:18789/hooks/gmail. */
  url: string;
  token: string;
  /** The hook's body limit in bytes. */
  bodyLimit: number;
  /** At most this many messages per request (the preset takes 100 at most). */
  maxMessages?: number;
  timeoutMs?: number;
}

/** The hook refused or failed; `status` 0 when it could not be reached. */
export class HookPostError extends Error {
  override readonly name = 'HookPostError';
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

const DEFAULT_MAX_MESSAGES = 100;
/** The `source` of every payload posted: a mapping may match on it (match.source). */
export const GMAIL_SOURCE = 'gmail';

export interface PostResult {
  requests: number;
}

export async function postMessages(messages: readonly HookMessage[], target: HookTarget): Promise<PostResult> {
  const result: PostResult = { requests: 0 };
  for (const batch of batchesOf(messages, target)) await postSplitting(batch, target, result);
  return result;
}

function bodyOf(messages: readonly HookMessage[]): string {
  return JSON.stringify({ source: GMAIL_SOURCE, messages });
}

/** Consecutive batches, each within the body limit and the message count (a lone oversize one alone). */
export function batchesOf(messages: readonly HookMessage[], target: HookTarget): HookMessage[][] {
  const max = target.maxMessages ?? DEFAULT_MAX_MESSAGES;
  const overhead = Buffer.byteLength(bodyOf([]));
  const out: HookMessage[][] = [];
  let batch: HookMessage[] = [];
  let size = overhead;
  for (const m of messages) {
    const bytes = Buffer.byteLength(JSON.stringify(m)) + 1;
    if (batch.length > 0 && (size + bytes > target.bodyLimit || batch.length >= max)) {
      out.push(batch);
      batch = [];
      size = overhead;
    }
    batch.push(m);
    size += bytes;
  }
  if (batch.length) out.push(batch);
  return out;
}

async function postSplitting(batch: HookMessage[], target: HookTarget, result: PostResult): Promise<void> {
  const status = await postOnce(batch, target, result);
  if (status !== 413) return;
  if (batch.length > 1) {
    const half = Math.ceil(batch.length / 2);
    await postSplitting(batch.slice(0, half), target, result);
    await postSplitting(batch.slice(half), target, result);
    return;
  }
  const [only] = batch;
  if (only?.body !== undefined) {
    const { body: _dropped, ...withoutBody } = only;
    if ((await postOnce([withoutBody], target, result)) !== 413) return;
  }
  throw new HookPostError(
    413,
    'payload_too_large',
    `the gmail hook refuses message ${only?.id} as too large even alone`,
  );
}

/** One request: the status when it is 2xx or 413; any other answer or failure is thrown. */
async function postOnce(batch: HookMessage[], target: HookTarget, result: PostResult): Promise<number> {
  result.requests++;
  let response: Awaited<ReturnType<typeof boundedFetch>>;
  let text: string;
  try {
    response = await boundedFetch(
      target.url,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
        body: bodyOf(batch),
      },
      { timeoutMs: target.timeoutMs ?? 60_000 },
    );
    // The hook's answer cut short: its outcome is unknown, so the batch is posted again later.
    if (response.cut !== undefined) throw new Error('the answer was cut short', { cause: response.cut });
    text = response.body.toString('utf8');
  } catch (err) {
    const cause = (err as { cause?: { code?: unknown }; name?: string }).cause?.code;
    throw new HookPostError(
      0,
      undefined,
      `the gmail hook could not be reached (${typeof cause === 'string' ? cause : (err as Error).name})`,
    );
  }
  if (response.ok || response.status === 413) return response.status;
  let code: string | undefined;
  let error = '';
  try {
    const body = JSON.parse(text) as { code?: unknown; error?: unknown };
    code = typeof body.code === 'string' ? body.code : undefined;
    error = typeof body.error === 'string' ? body.error.slice(0, 200) : '';
  } catch {
    // not a hookgate answer
  }
  throw new HookPostError(
    response.status,
    code,
    `the gmail hook answered ${response.status}${code ? ` ${code}` : ''}${error ? `: ${error}` : ''}`,
  );
}
