// What every fake chat platform shares: a real HTTP server on loopback that records each request
// with the time it arrived (by its own clock), answers it as the platform would, and can be told to
// give scripted answers next (a 429 with its wait, a 5xx, a refusal, an answer that stalls mid-body).
// A fake enforces the platform's published rate limits the way the platform does, with a 429;
// `unprovoked429` counts those.

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Arrival {
  /** Date.now() when the request arrived. */
  at: number;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Sent as JSON unless a string. */
  body?: unknown;
  /** Send the headers (with the whole body's length) and half the body, then nothing more. */
  stall?: boolean;
}

/** The platform's answer to a request; undefined: 404 as the platform would. */
export type Handler = (a: Arrival, fake: FakePlatform) => Reply;

export class FakePlatform {
  readonly arrivals: Arrival[] = [];
  /** Replies handed out before the handler, in order (the test's script). */
  readonly scripted: Reply[] = [];
  /** Replies for the first request each matches, used once (a script aimed at one chat or one part). */
  readonly aimed: { match: (a: Arrival) => boolean; reply: Reply }[] = [];
  /** 429s the fake's own rate limit gave (not scripted): a paced sender never causes one. */
  unprovoked429 = 0;
  /** When each scripted 429 was answered, with its announced wait in ms. */
  readonly limited: { at: number; waitMs: number }[] = [];
  url = '';
  readonly #server: Server;
  readonly #windows = new Map<string, number[]>();

  constructor(readonly handler: Handler) {
    this.#server = createServer((req, res) => {
      const at = Date.now();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: any = raw;
        try {
          body = raw ? JSON.parse(raw) : undefined;
        } catch {}
        const url = new URL(req.url ?? '/', 'http://fake');
        const arrival: Arrival = {
          at,
          method: req.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body,
        };
        this.arrivals.push(arrival);
        const aimed = this.aimed.findIndex((s) => s.match(arrival));
        const reply =
          aimed >= 0 ? this.aimed.splice(aimed, 1)[0]!.reply : (this.scripted.shift() ?? this.handler(arrival, this));
        const text =
          typeof reply.body === 'string' ? reply.body : reply.body === undefined ? '' : JSON.stringify(reply.body);
        res.writeHead(reply.status, {
          'content-type':
            typeof reply.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
          ...(reply.stall ? { 'content-length': String(Buffer.byteLength(text)) } : {}),
          ...reply.headers,
        });
        if (reply.stall) res.write(text.slice(0, Math.floor(text.length / 2)));
        else res.end(text);
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  /** Arrivals that posted a message (not checks). */
  posts(match: (a: Arrival) => boolean): Arrival[] {
    return this.arrivals.filter(match);
  }

  /**
   * The platform's own limit: true when this arrival is one too many in `perMs` for `key` (it is not
   * counted then, as a refused request is not).
   */
  overLimit(key: string, count: number, perMs: number, at: number): boolean {
    const times = (this.#windows.get(key) ?? []).filter((t) => t > at - perMs);
    if (times.length >= count) {
      this.#windows.set(key, times);
      this.unprovoked429++;
      return true;
    }
    times.push(at);
    this.#windows.set(key, times);
    return false;
  }

  /** Scripts a 429 (for the first request `match` accepts, else the next) and notes when it was answered. */
  scriptLimit(reply: Reply, waitMs: number, match?: (a: Arrival) => boolean): void {
    const limited = this.limited;
    const scripted: Reply = {
      get status() {
        limited.push({ at: Date.now(), waitMs });
        return reply.status;
      },
      headers: reply.headers,
      body: reply.body,
    };
    if (match) this.aimed.push({ match, reply: scripted });
    else this.scripted.push(scripted);
  }
}
