// Streaming body reader: refuses a declared length over the limit before reading, cuts a chunked
// body off at the limit, and gives up when the whole body has not arrived in time.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type HookError, refuse } from '../errors.ts';

const SWEEP_MS = 250;

/**
 * Reads request bodies for one plugin instance. The deadlines of the bodies being read are checked
 * by one sweep every SWEEP_MS instead of a timer per request.
 */
export class BodyReceiver {
  readonly #reading = new Set<BodyReader>();
  #sweeper: NodeJS.Timeout | undefined;
  readonly #sweep = (): void => {
    const now = Date.now();
    for (const r of this.#reading) if (r.deadline <= now) r.expire();
    if (this.#reading.size === 0) this.#stopSweeping();
  };

  /**
   * Rejects at once when the declared length is over the limit (nothing is read, and no "100 Continue"
   * is sent); otherwise a client waiting for "100 Continue" gets it now, and the body is read.
   */
  read(
    req: IncomingMessage,
    res: ServerResponse,
    limit: number,
    timeoutMs: number,
    expectsContinue = false,
  ): Promise<Buffer> {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) return Promise.reject(refuse.payloadTooLarge(limit));
    if (expectsContinue) res.writeContinue();
    return new Promise((resolve, reject) => {
      this.#reading.add(new BodyReader(req, limit, timeoutMs, resolve, reject, this.#reading));
      if (!this.#sweeper) {
        this.#sweeper = setInterval(this.#sweep, SWEEP_MS);
        this.#sweeper.unref();
      }
    });
  }

  /** Bodies still being read are left to their requests; only the sweep stops. */
  close(): void {
    this.#stopSweeping();
  }

  #stopSweeping(): void {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
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
    private resolve: (body: Buffer) => void,
    private reject: (err: HookError) => void,
    private readonly reading: Set<BodyReader>,
  ) {
    this.deadline = Date.now() + timeoutMs;
    req.on('data', this.onData);
    req.on('end', this.onEnd);
    req.on('error', this.onAbort);
    req.on('close', this.onAbort);
  }

  private data(chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.length;
    if (this.size > this.limit) this.fail(refuse.payloadTooLarge(this.limit));
    else this.chunks.push(chunk);
  }

  private end(): void {
    if (this.settled) return;
    const { chunks, resolve } = this;
    this.settle();
    resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.size));
  }

  private abort(): void {
    if (this.settled) return;
    this.fail(refuse.bodyCutOff());
  }

  expire(): void {
    if (this.settled) return;
    this.fail(refuse.bodyTimeout(this.timeoutMs));
  }

  private fail(err: HookError): void {
    const { reject } = this;
    this.settle();
    // Stop reading what is left; the response closes the connection.
    this.req.pause();
    reject(err);
  }

  /**
   * The request keeps this reader (its listeners) until the answer is out: the chunks are let go
   * now, or a flood of large bodies keeps every one alive long enough to be promoted to the old
   * generation, where only a full collection frees it. So are the promise's resolving functions:
   * a resolve function keeps the value it resolved with, the whole body.
   */
  private settle(): void {
    this.settled = true;
    this.chunks = [];
    this.resolve = settledAlready;
    this.reject = settledAlready;
    this.reading.delete(this);
  }
}

function settledAlready(): void {}

/** The body as a JSON object, whatever its Content-Type. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw refuse.invalidJson('the body is empty; send a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw refuse.invalidJson('the body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw refuse.invalidJson('the body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
