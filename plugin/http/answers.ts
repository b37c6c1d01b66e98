// The one writer of answers. Every answer is JSON (errors too: `{ ok: false, error, code }`), or empty,
// except the text a sender asks for: a Meta handshake's challenge, a mapping's `respond` text.
//
// writeJson/writeError send at once; hosts use them for their own answers. An AnswerBatch, owned by
// each plugin instance, holds the answers of hook requests until the event loop has read what the
// sockets had ready (a setImmediate) and writes them together: a burst of answers then wakes a waiting
// client once rather than once per answer, and its next requests arrive together too. An answer
// waits at most for the requests read in the same turn (docs/performance.md has the measurements).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HookError } from '../errors.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';
/** Past this many waiting, answers go out at once: a turn with thousands of ready sockets does not hold the first. */
const MAX_WAITING = 128;
const NOTHING_WAITING = Promise.resolve();

type Headers = Readonly<Record<string, string>>;
type HeadersOut = Record<string, string | number>;

export function errorBody(err: HookError): { ok: false; error: string; code: string } {
  return { ok: false, error: err.message, code: err.code };
}

/** Refusals anyone can provoke at will are made once (errors.ts), so their text is kept with them. */
const errorTexts = new WeakMap<HookError, string>();

function errorText(err: HookError): string {
  let text = errorTexts.get(err);
  if (text === undefined) errorTexts.set(err, (text = JSON.stringify(errorBody(err))));
  return text;
}

/** Frozen bodies are made once and answered many times (a duplicate's marked first answer): their text is kept. */
const frozenTexts = new WeakMap<object, string>();

function bodyText(body: unknown): string {
  if (body === undefined) return '';
  if (typeof body !== 'object' || body === null || !Object.isFrozen(body)) return JSON.stringify(body);
  let text = frozenTexts.get(body);
  if (text === undefined) frozenTexts.set(body, (text = JSON.stringify(body)));
  return text;
}

/** Status line headers for an answer: one object, so writeHead sets them all at once. */
function headersFor(
  text: string,
  requestId: string | undefined,
  extra: Headers | undefined,
  type = JSON_TYPE,
): HeadersOut {
  const all: HeadersOut = text === '' ? {} : { 'content-type': type, 'content-length': Buffer.byteLength(text) };
  if (requestId !== undefined) all['x-request-id'] = requestId;
  if (extra) for (const name in extra) all[name] = extra[name]!;
  return all;
}

function write(res: ServerResponse, status: number, headers: HeadersOut, text: string): void {
  // Answered already: the first answer wins.
  if (res.headersSent) return;
  if (res.destroyed) {
    // The client is gone; the log still shows what it was answered.
    res.statusCode = status;
    return;
  }
  // Answered before its body was all received (a refusal, or a client still waiting for "100
  // Continue"): the rest is not drained, and a slow sender cannot hold the connection.
  const req = res.req as IncomingMessage | undefined;
  if (req && (!req.complete || headers.connection === 'close')) {
    headers.connection = 'close';
    res.once('finish', () => req.destroy());
  }
  try {
    res.writeHead(status, headers);
    res.end(text);
  } catch {
    // A header Node refuses must not keep other answers from going out.
    res.destroy();
  }
}

/** Sends a JSON answer now. */
export function writeJson(res: ServerResponse, status: number, body: unknown, headers?: Headers): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  write(res, status, headersFor(text, undefined, headers), text);
}

/** Sends a refusal now. */
export function writeError(res: ServerResponse, err: HookError): void {
  writeJson(res, err.status, errorBody(err), err.headers);
}

interface Waiting {
  res: ServerResponse;
  status: number;
  headers: HeadersOut;
  text: string;
}

/** Answers of one plugin instance, written together once per turn of the event loop. */
export class AnswerBatch {
  #waiting: Waiting[] = [];
  #written: Promise<void> | undefined;
  #markWritten: (() => void) | undefined;
  readonly #flush = (): void => this.#writeWaiting();

  /** Queues a JSON answer (or an empty one, for body undefined). */
  send(res: ServerResponse, status: number, body: unknown, requestId?: string, headers?: Headers): void {
    if (res.headersSent) return;
    const text = bodyText(body);
    this.#queue({ res, status, headers: headersFor(text, requestId, headers), text });
  }

  /** Queues a text/plain answer. */
  sendText(res: ServerResponse, status: number, text: string, requestId?: string, headers?: Headers): void {
    if (res.headersSent) return;
    this.#queue({ res, status, headers: headersFor(text, requestId, headers, TEXT_TYPE), text });
  }

  #queue(answer: Waiting): void {
    this.#waiting.push(answer);
    if (this.#waiting.length === 1) setImmediate(this.#flush);
    else if (this.#waiting.length >= MAX_WAITING) this.#writeWaiting();
  }

  sendError(res: ServerResponse, err: HookError, requestId?: string): void {
    if (res.headersSent) return;
    const text = errorText(err);
    this.#queue({ res, status: err.status, headers: headersFor(text, requestId, err.headers), text });
  }

  /** Settles when every answer queued so far has been handed to its socket. */
  written(): Promise<void> {
    if (this.#waiting.length === 0) return NOTHING_WAITING;
    this.#written ??= new Promise((resolve) => (this.#markWritten = resolve));
    return this.#written;
  }

  #writeWaiting(): void {
    const batch = this.#waiting;
    const done = this.#markWritten;
    this.#waiting = [];
    this.#written = this.#markWritten = undefined;
    for (const { res, status, headers, text } of batch) write(res, status, headers, text);
    done?.();
  }
}
