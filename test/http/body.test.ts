// Request bodies, driven with raw node:net / node:http clients: the size limit (declared and streamed),
// the body timeout, clients that vanish, and payloads that try prototype pollution.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createServer, request, type IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HOOK_TOKEN, post, startTestGateway, type TestGateway } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';
import type { RequestEntry } from '../../plugin/request-log/entry.ts';

const LIMIT = 1024;

let gw: TestGateway;
let port: number;
before(async () => {
  gw = await startTestGateway({ hooks: { maxBodyBytes: LIMIT, bodyTimeoutSeconds: 0.5 } });
  port = Number(new URL(gw.url).port);
});
after(() => gw.close());

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Parses the first HTTP response in `raw` (Content-Length framed). */
function parseResponse(raw: string): RawResponse | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = raw.slice(end + 4);
  if (Buffer.byteLength(body) < length) return undefined;
  return { status: Number(statusLine!.split(' ')[1]), headers, body: body.slice(0, length) };
}

/** A raw connection that collects what the server sends and notes when it closes. */
class RawClient {
  readonly socket: Socket;
  received = '';
  closed = false;
  readonly done: Promise<void>;
  private waiters: (() => void)[] = [];

  constructor(to = port) {
    this.socket = connect(to, '127.0.0.1');
    this.socket.setEncoding('utf8');
    this.socket.on('data', (d: string) => {
      this.received += d;
      this.wake();
    });
    this.socket.on('error', () => {}); // EPIPE / ECONNRESET once the server hangs up
    this.done = new Promise((resolve) =>
      this.socket.on('close', () => {
        this.closed = true;
        this.wake();
        resolve();
      }),
    );
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves with the first complete response (or rejects if the connection closes without one). */
  response(timeoutMs = 3000): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no response; got ${JSON.stringify(this.received)}`)), timeoutMs);
      const check = (): void => {
        const r = parseResponse(this.received);
        if (r) {
          clearTimeout(timer);
          resolve(r);
        } else if (this.closed) {
          clearTimeout(timer);
          reject(new Error(`closed without a response; got ${JSON.stringify(this.received)}`));
        } else this.waiters.push(check);
      };
      check();
    });
  }

  write(data: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed || this.socket.destroyed) return resolve();
      this.socket.write(data, () => resolve());
    });
  }
}

function head(path: string, headers: Record<string, string | number>): string {
  const lines = [
    `POST ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: Bearer ${HOOK_TOKEN}`,
    'Content-Type: application/json',
  ];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A JSON wake body of exactly `bytes` bytes. */
function wakeBodyOfSize(bytes: number): string {
  const empty = JSON.stringify({ text: '' });
  const body = JSON.stringify({ text: 'x'.repeat(bytes - empty.length) });
  assert.equal(Buffer.byteLength(body), bytes);
  return body;
}

function assertJsonError(r: RawResponse, status: number, code: string): void {
  assert.equal(r.status, status, r.body);
  assert.match(r.headers['content-type'] ?? '', /^application\/json; charset=utf-8/);
  const body = JSON.parse(r.body);
  assert.equal(body.ok, false);
  assert.equal(body.code, code);
}

/** A request whose client went away partway through the body: refused as bad HTTP, not as bad JSON. */
function assertCutOff(logged: RequestEntry | undefined): void {
  assert.ok(logged, 'the request is in the request log');
  assert.equal(logged.code, 'bad_request', JSON.stringify(logged));
  assert.equal(logged.status, 400);
}

async function stillServing(): Promise<void> {
  const r = await post(gw.url, '/hooks/wake', { text: 'are you alive?' });
  assert.equal(r.status, 200);
}

test('Content-Length over maxBodyBytes: 413 before any of the body is sent', async () => {
  const c = new RawClient();
  await c.write(head('/hooks/wake', { 'Content-Length': LIMIT + 1 }));
  const r = await c.response();
  assertJsonError(r, 413, 'payload_too_large');
  assert.equal(r.headers.connection, 'close');
  await c.done; // the server hangs up instead of waiting for the body
  const c2 = new RawClient();
  await c2.write(head('/hooks/agent', { 'Content-Length': 10_000_000 }));
  assertJsonError(await c2.response(), 413, 'payload_too_large');
  await c2.done;
  assert.equal(gw.rec.turns.length, 0);
  await stillServing();
});

test('a chunked body that grows past the limit: 413 and the connection is closed', async () => {
  const eventsBefore = gw.rec.events.length;
  const c = new RawClient();
  await c.write(head('/hooks/wake', { 'Transfer-Encoding': 'chunked' }));
  await c.write(`5\r\n{"tex\r\n`);
  const chunk = 'x'.repeat(16 * 1024);
  const frame = `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
  let sent = 0;
  // Keep sending: the server must answer and hang up rather than keep reading. (What it does not read
  // piles up in the kernel's socket buffers, a few MB at most; a server that kept reading would let
  // this loop run to the cap.)
  while (!c.closed && !c.socket.destroyed && sent < 64 * 1024 * 1024) {
    await c.write(frame);
    sent += chunk.length;
    await new Promise(setImmediate);
  }
  await c.done;
  assert.ok(c.closed, `the server kept reading ${sent} bytes`);
  const r = parseResponse(c.received);
  assert.ok(r, `no response before the close: ${JSON.stringify(c.received)}`);
  assertJsonError(r, 413, 'payload_too_large');
  assert.equal(gw.rec.events.length, eventsBefore);
  await stillServing();
});

test('a body exactly at the limit is accepted, one byte more is not', async () => {
  const atLimit = await post(gw.url, '/hooks/wake', undefined, { rawBody: wakeBodyOfSize(LIMIT) });
  assert.equal(atLimit.status, 200, JSON.stringify(atLimit.body));
  const over = await post(gw.url, '/hooks/wake', undefined, { rawBody: wakeBodyOfSize(LIMIT + 1) });
  assert.equal(over.status, 413);
  assert.equal(over.body.code, 'payload_too_large');

  // Also when streamed in chunks with no Content-Length.
  const body = wakeBodyOfSize(LIMIT);
  const c = new RawClient();
  await c.write(head('/hooks/wake', { 'Transfer-Encoding': 'chunked' }));
  for (let i = 0; i < body.length; i += 100) {
    const part = body.slice(i, i + 100);
    await c.write(`${part.length.toString(16)}\r\n${part}\r\n`);
  }
  await c.write('0\r\n\r\n');
  const r = await c.response();
  assert.equal(r.status, 200, r.body);
  assert.deepEqual(JSON.parse(r.body), { ok: true, mode: 'now' });
  c.socket.destroy();
});

test('a body that stalls: 408 body_timeout, while other clients are served', async () => {
  const c = new RawClient();
  await c.write(head('/hooks/wake', { 'Content-Length': 100 }));
  await c.write('{"text":"only the begin');
  const pending = c.response();
  let slowAnswered = false;
  void pending.then(
    () => (slowAnswered = true),
    () => {},
  );
  // Another connection is served while the slow one waits.
  await stillServing();
  assert.equal(slowAnswered, false, 'the stalled request was answered before its body timed out');
  const r = await pending;
  assertJsonError(r, 408, 'body_timeout');
  assert.match(JSON.parse(r.body).error, /0\.5 s/);
  await c.done;
  await stillServing();
});

test('a body that trickles in keeps the deadline: the whole body must arrive in time', async () => {
  const eventsBefore = gw.rec.events.length;
  const c = new RawClient();
  await c.write(head('/hooks/wake', { 'Content-Length': 200 }));
  await c.write('{"text":"');
  // One byte every 50 ms would take 10 s; the 0.5 s limit is for the whole body, not per byte.
  const trickle = setInterval(() => void c.write('x'), 50);
  try {
    const r = await c.response();
    assertJsonError(r, 408, 'body_timeout');
  } finally {
    clearInterval(trickle);
  }
  await c.done;
  assert.equal(gw.rec.events.length, eventsBefore);
});

test('a body read to its end is not kept alive by the request that carried it', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // The request outlives its body: a host (and Node, until the answer is out) holds it.
  const held: IncomingMessage[] = [];
  const chunks: WeakRef<Buffer>[] = [];
  const server = createServer((req, res) => {
    held.push(req);
    req.on('data', (chunk: Buffer) => chunks.push(new WeakRef(chunk)));
    void gw.plugin.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const c = new RawClient((server.address() as AddressInfo).port);
    const body = wakeBodyOfSize(600);
    await c.write(head('/hooks/wake', { 'Content-Length': 600 }));
    const parts = [body.slice(0, 200), body.slice(200, 400), body.slice(400)];
    for (const [i, part] of parts.entries()) {
      await c.write(part);
      // Apart, so that each part arrives as a chunk of its own.
      if (i < parts.length - 1) await waitUntil(() => chunks.length > i, `part ${i + 1} read`);
    }
    assert.equal((await c.response()).status, 200);
    assert.ok(chunks.length >= 2, `the body came in ${chunks.length} chunk(s)`);
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    assert.equal(held.length, 1);
    assert.deepEqual(
      chunks.map((ref) => ref.deref() === undefined),
      chunks.map(() => true),
    );
    c.socket.destroy();
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('the whole body is let go once planned: not kept while the action is awaited', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let release!: () => void;
  const holding = new Promise<void>((resolve) => (release = resolve));
  let reached = false;
  const big = await startTestGateway({
    hooks: { maxBodyBytes: 8 * 1024 * 1024 },
    // The wake's action waits here, as the durable write of a large event does.
    systemEvent: () => {
      reached = true;
      return holding;
    },
  });
  try {
    const size = 4 * 1024 * 1024;
    gc();
    const before = process.memoryUsage().arrayBuffers;
    const c = new RawClient(Number(new URL(big.url).port));
    await c.write(head('/hooks/wake', { 'Content-Length': size }));
    await c.write(wakeBodyOfSize(size));
    await waitUntil(() => reached, 'the action is under way');
    // The event's text lives on (it is what gets written); the raw bytes do not, while the action is
    // still held. A loaded host may free the sockets' own buffers a few turns late: measured until
    // they are gone, for up to 10 s of the held action (a body kept by the request stays all along).
    let kept = Infinity;
    for (let i = 0; i < 200 && kept >= size / 4; i++) {
      if (i) await new Promise((resolve) => setTimeout(resolve, 50));
      gc();
      kept = process.memoryUsage().arrayBuffers - before;
    }
    assert.ok(kept < size / 4, `${(kept / 1048576).toFixed(1)} MB of buffers kept while the action runs`);
    release();
    assert.equal((await c.response()).status, 200);
    assert.equal(big.rec.events[0]!.text.length, size - JSON.stringify({ text: '' }).length);
    c.socket.destroy();
  } finally {
    release();
    await big.close();
  }
});

test('a client that aborts mid-body does not crash the server', async () => {
  const logsBefore = gw.rec.logs.filter((l) => l.msg === 'hook request').length;
  const c = new RawClient();
  await c.write(head('/hooks/agent', { 'Content-Length': 500 }));
  await c.write('{"message":"half of it');
  c.socket.destroy();
  await c.done;
  await waitUntil(
    () => gw.rec.logs.filter((l) => l.msg === 'hook request').length > logsBefore,
    'the aborted request is logged',
  );
  assert.equal(gw.rec.logs.filter((l) => l.msg === 'hook request failed').length, 0, 'no internal error');
  // The client is gone and hears nothing; the request log keeps why its request was refused.
  assertCutOff((await gw.plugin.requests.page({}, 1)).requests[0]);

  // The same through node:http, aborted after part of a chunked body.
  const logsBeforeHttp = gw.rec.logs.filter((l) => l.msg === 'hook request').length;
  await new Promise<void>((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/hooks/wake',
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write('{"text":"par', () => req.destroy());
  });
  await waitUntil(
    () => gw.rec.logs.filter((l) => l.msg === 'hook request').length > logsBeforeHttp,
    'the aborted request is logged',
  );
  assertCutOff((await gw.plugin.requests.page({}, 1)).requests[0]);
  await stillServing();
  assert.equal(gw.rec.turns.length, 0);
});

test('prototype pollution: __proto__ and constructor are unknown fields, nothing is polluted', async () => {
  const bodies: [string, string][] = [
    ['/hooks/wake', '{"text":"x","__proto__":{"polluted":1}}'],
    ['/hooks/agent', '{"message":"x","__proto__":{"polluted":1}}'],
    ['/hooks/wake', '{"text":"x","constructor":{"prototype":{"polluted":1}}}'],
    ['/hooks/agent', '{"message":"x","constructor":{"prototype":{"polluted":1}}}'],
  ];
  for (const [p, raw] of bodies) {
    const r = await post(gw.url, p, undefined, { rawBody: raw });
    assert.equal(r.status, 400, raw);
    assert.equal(r.body.code, 'invalid_payload');
    assert.match(r.body.error, /(__proto__|constructor) is not a known field/);
    assert.equal(({} as any).polluted, undefined);
    assert.equal((Object.prototype as any).polluted, undefined);
  }
  assert.equal(gw.rec.turns.length, 0);
});
