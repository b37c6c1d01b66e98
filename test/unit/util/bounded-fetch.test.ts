// boundedFetch against a real loopback server: a peer that answers its headers and then stalls
// mid-body fails the exchange at its deadline (and its connection is closed), one that never answers
// fails the same way, a caller's stop ends a stalled read at once, and a body past maxBytes is cut.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { boundedFetch, ExchangeTimeout } from '../../../plugin/util/bounded-fetch.ts';
import { waitUntil } from '../../helpers/common.ts';

let base = '';
const sockets = new Set<Socket>();
const closed = new Set<Socket>();
const server = createServer((req, res: ServerResponse) => {
  if (req.url === '/stall-body') {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"ok":tr');
  } else if (req.url === '/stall-headers') {
    // Nothing at all.
  } else if (req.url === '/large') {
    res.end('x'.repeat(100_000));
  } else res.end('{"ok":true}');
});
server.on('connection', (socket: Socket) => {
  sockets.add(socket);
  socket.on('close', () => closed.add(socket));
});

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Every connection the server saw is closed (the client gave it up). */
const allClosed = (): Promise<void> =>
  waitUntil(() => [...sockets].every((s) => closed.has(s)), 'the connections closed');

test('headers, then a stalled body: ExchangeTimeout (body) at the deadline, and the connection is closed', async () => {
  // Long enough for the headers to arrive first on a loaded machine (a first fetch warms up too).
  await assert.rejects(
    boundedFetch(`${base}/stall-body`, {}, { timeoutMs: 3000 }),
    (err: unknown) => err instanceof ExchangeTimeout && err.phase === 'body' && err.ms === 3000,
  );
  await allClosed();
});

test('no answer at all: ExchangeTimeout (headers)', async () => {
  await assert.rejects(
    boundedFetch(`${base}/stall-headers`, {}, { timeoutMs: 300 }),
    (err: unknown) => err instanceof ExchangeTimeout && err.phase === 'headers',
  );
  await allClosed();
});

test("the caller's stop ends a stalled read with its reason, long before the deadline", async () => {
  const stop = new AbortController();
  const exchange = boundedFetch(`${base}/stall-body`, {}, { timeoutMs: 600_000, signal: stop.signal });
  await waitUntil(() => sockets.size > 0 && [...sockets].some((s) => !closed.has(s)), 'the request under way');
  stop.abort(new Error('stopping'));
  await assert.rejects(exchange, /stopping/);
  await allClosed();
});

test('a whole answer is read; one past maxBytes is cut there and said truncated', async () => {
  const whole = await boundedFetch(`${base}/ok`, {}, { timeoutMs: 10_000 });
  assert.equal(whole.status, 200);
  assert.equal(whole.body.toString(), '{"ok":true}');
  assert.equal(whole.truncated, false);
  const cut = await boundedFetch(`${base}/large`, {}, { timeoutMs: 10_000, maxBytes: 1000 });
  assert.equal(cut.body.length, 1000);
  assert.equal(cut.truncated, true);
  await allClosed();
});
