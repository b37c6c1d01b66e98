// One HTTP exchange with a platform, and the readings every sender shares: the answer's JSON, the
// wait a 429 announces, and the outcome of a status without a platform-specific body. Every text
// that leaves here has been through the redactor. An exchange is bounded from the request to the
// answer's last byte (the channel's timeoutSeconds): a platform that stalls mid-body fails the try.

import type { Redactor } from './redact.ts';
import type { SendOutcome } from './types.ts';
import { errorMessage } from '../plugin/util/errors.ts';
import { boundedFetch, ExchangeTimeout } from '../plugin/util/bounded-fetch.ts';

/** Enough of an answer to read a message id or an error; a larger body is cut there. */
const MAX_ANSWER_BYTES = 256 * 1024;

export interface Answer {
  status: number;
  headers: Headers;
  /** The body parsed as JSON, when it is JSON. */
  json: unknown;
  /** The body as text (cut at MAX_ANSWER_BYTES). */
  text: string;
}

export interface Request {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** From the request to the answer's last byte (channels.<name>.timeoutSeconds, ChannelBlock.timeoutMs). */
  timeoutMs: number;
}

/**
 * The answer, or the retryable outcome of a request that got none (network error, no whole answer in
 * time, the stop). A body the connection cut short still tells what it can.
 */
export async function exchange(req: Request, redactor: Redactor, signal: AbortSignal): Promise<Answer | Failed> {
  const { timeoutMs } = req;
  let res: Awaited<ReturnType<typeof boundedFetch>>;
  try {
    res = await boundedFetch(
      req.url,
      {
        method: req.method ?? 'POST',
        headers: {
          accept: 'application/json',
          ...(req.body !== undefined ? { 'content-type': 'application/json; charset=utf-8' } : {}),
          ...req.headers,
        },
        body: req.body !== undefined ? JSON.stringify(req.body) : undefined,
        redirect: 'error',
      },
      { timeoutMs, signal, maxBytes: MAX_ANSWER_BYTES },
    );
  } catch (err) {
    const why =
      err instanceof ExchangeTimeout
        ? err.phase === 'headers'
          ? `no answer within ${timeoutMs / 1000} s`
          : `the answer stalled: not whole within ${timeoutMs / 1000} s`
        : signal.aborted
          ? 'stopped before the platform answered'
          : networkReason(err);
    return { kind: 'retryable', description: redactor.clean(why) };
  }
  const text = res.body.toString('utf8');
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: res.status, headers: res.headers, json, text };
}

export function isAnswer(a: Answer | Failed): a is Answer {
  return 'status' in a && 'headers' in a;
}

function networkReason(err: unknown): string {
  // fetch's own message is "fetch failed"; the cause says what failed (ECONNREFUSED, a TLS error).
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const what = cause?.code ?? cause?.message ?? errorMessage(err);
  return `could not reach the platform: ${what}`;
}

/**
 * Retry-After in seconds (or an HTTP date), as milliseconds; undefined when absent or unreadable. A
 * wait too long to write down is Infinity: the caller holds every announced wait to its cap.
 */
export function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** An announced wait in seconds from a body field, as milliseconds (Infinity when too long to hold). */
export function secondsToMs(value: unknown): number | undefined {
  return typeof value === 'number' && value >= 0 ? Math.ceil(value * 1000) : undefined;
}

/**
 * The outcome of a failed answer from its status: 429 and 5xx may pass, anything else will not. The
 * description is the platform's, or the status line when it gave none.
 */
export function failure(
  a: Answer,
  redactor: Redactor,
  description: string | undefined,
  wait?: { ms?: number; scope?: 'recipient' | 'channel' },
): Failed {
  const said = redactor.clean(description || a.text || `HTTP ${a.status}`);
  const what = `HTTP ${a.status}: ${said}`;
  if (a.status === 429 || a.status >= 500) {
    const waitMs = wait?.ms ?? retryAfterMs(a.headers);
    return {
      kind: 'retryable',
      description: what,
      status: a.status,
      ...(waitMs !== undefined ? { waitMs, scope: wait?.scope ?? 'channel' } : {}),
    };
  }
  return { kind: 'permanent', description: what, status: a.status };
}

/** A JSON object's string field, or undefined. */
export function field(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' && Object.hasOwn(value, key)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

export type Failed = Exclude<SendOutcome, { kind: 'sent' }>;
/** An exchange read by a platform: its JSON when it succeeded, else why not. */
export type Result = { kind: 'ok'; json: unknown; answer: Answer } | Failed;

/** One exchange read the common way: any 2xx is success, anything else is what `fail` makes of it. */
export async function call(
  req: Request,
  redactor: Redactor,
  signal: AbortSignal,
  fail: (a: Answer) => Failed,
): Promise<Result> {
  const a = await exchange(req, redactor, signal);
  if (!isAnswer(a)) return a;
  return a.status >= 200 && a.status < 300 ? { kind: 'ok', json: a.json, answer: a } : fail(a);
}
