// Streaming body reader: refuses a declared length over the limit before reading, cuts a chunked
// body off at the limit, and gives up when the whole body has not arrived in time.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HookError } from '../errors.ts';
import { sendContinue } from './continue.ts';

const CLOSE = Object.freeze({ connection: 'close' });

export function tooLarge(limit: number): HookError {
  return new HookError(413, 'payload_too_large', `body is larger than ${limit} bytes`, CLOSE);
}

/**
 * Throws at once (not a rejected promise) when the declared length is over the limit; otherwise a
 * client waiting for "100 Continue" gets it now, and the body is read.
 */
export function readBody(req: IncomingMessage, res: ServerResponse, limit: number, timeoutMs: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  sendContinue(req, res);
  return new Promise((resolve, reject) => new BodyReader(req, limit, timeoutMs, resolve, reject));
}

/** Deadlines of bodies being read, checked by one shared sweep instead of a timer per request. */
const reading = new Set<BodyReader>();
const SWEEP_MS = 250;
let sweeper: NodeJS.Timeout | undefined;

function sweep(): void {
  const now = Date.now();
  for (const r of reading) if (r.deadline <= now) r.expire();
  if (reading.size === 0) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/**
 * One body being read. A class with methods bound once, rather than closures: this runs for every
 * request, and under tsx each named closure also costs a defineProperty. Its listeners stay on the
 * request once it has settled (they return at once): removing four listeners per request cost more
 * than leaving them, and the 'error' one keeps a late socket error from going unhandled.
 */
class BodyReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private settled = false;
  readonly deadline: number;
  private readonly onData = this.data.bind(this);
  private readonly onEnd = this.end.bind(this);
  private readonly onAbort = this.abort.bind(this);

  constructor(
    private readonly req: IncomingMessage,
    private readonly limit: number,
    private readonly timeoutMs: number,
    private readonly resolve: (body: Buffer) => void,
    private readonly reject: (err: HookError) => void,
  ) {
    this.deadline = Date.now() + timeoutMs;
    reading.add(this);
    if (!sweeper) {
      sweeper = setInterval(sweep, SWEEP_MS);
      sweeper.unref();
    }
    req.on('data', this.onData);
    req.on('end', this.onEnd);
    req.on('error', this.onAbort);
    req.on('close', this.onAbort);
  }

  private data(chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.length;
    if (this.size > this.limit) this.fail(tooLarge(this.limit));
    else this.chunks.push(chunk);
  }

  private end(): void {
    if (this.settled) return;
    const chunks = this.chunks;
    this.settle();
    this.resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.size));
  }

  private abort(): void {
    if (this.settled) return;
    this.fail(new HookError(400, 'invalid_json', 'the request body was cut off by the client', CLOSE));
  }

  expire(): void {
    if (this.settled) return;
    this.fail(new HookError(408, 'body_timeout', `the body was not received within ${this.timeoutMs / 1000} s`, CLOSE));
  }

  private fail(err: HookError): void {
    this.settle();
    // Stop reading what is left; the response closes the connection.
    this.req.pause();
    this.reject(err);
  }

  /**
   * The request keeps this reader (its listeners) until the answer is out: the chunks are let go
   * now, or a flood of large bodies keeps every one alive long enough to be promoted to the old
   * generation, where only a full collection frees it.
   */
  private settle(): void {
    this.settled = true;
    this.chunks = [];
    reading.delete(this);
  }
}

/** The body as a JSON object, whatever its Content-Type. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw new HookError(400, 'invalid_json', 'the body is empty; send a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new HookError(400, 'invalid_json', 'the body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HookError(400, 'invalid_json', 'the body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
