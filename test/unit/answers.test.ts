// An AnswerBatch: answers decided in one turn of the event loop go out together after it, over a real server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnswerBatch } from '../../plugin/http/answers.ts';

interface Reply {
  status: number;
  body: string;
}

/** A server that holds requests until `count` have arrived, then lets `answerAll` decide them in one turn. */
async function collectingServer(
  count: number,
  answerAll: (held: { req: IncomingMessage; res: ServerResponse }[]) => void,
) {
  const held: { req: IncomingMessage; res: ServerResponse }[] = [];
  const server = createServer((req, res) => {
    held.push({ req, res });
    if (held.length === count) answerAll(held.splice(0));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const get = (path: string): Promise<Reply | 'cut off'> =>
    new Promise((resolve) => {
      const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', () => resolve('cut off'));
      req.end();
    });
  return { get, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

test('an answer goes out after the turn that decided it, and written() settles once it has', async () => {
  const seen: { atDecision: boolean; afterWritten: boolean }[] = [];
  const batch = new AnswerBatch();
  const srv = await collectingServer(1, ([held]) => {
    const { res } = held!;
    batch.send(res, 200, { ok: true });
    const atDecision = res.headersSent;
    void batch.written().then(() => seen.push({ atDecision, afterWritten: res.headersSent }));
  });
  try {
    assert.deepEqual(await srv.get('/'), { status: 200, body: '{"ok":true}' });
    assert.deepEqual(seen, [{ atDecision: false, afterWritten: true }]);
  } finally {
    await srv.close();
  }
});

test('past 128 answers waiting, they go out at once instead of waiting for the turn to end', async () => {
  const sentAt: boolean[] = [];
  const batch = new AnswerBatch();
  const srv = await collectingServer(130, (held) => {
    for (const [i, { res }] of held.entries()) batch.send(res, 200, { i });
    for (const { res } of held) sentAt.push(res.headersSent);
  });
  try {
    const replies = await Promise.all(Array.from({ length: 130 }, () => srv.get('/')));
    assert.ok(replies.every((r) => r !== 'cut off' && r.status === 200));
    assert.deepEqual(sentAt, [...Array(128).fill(true), false, false]);
  } finally {
    await srv.close();
  }
});

test('in one batch, a refused header and a vanished client cost their own answers only; the first answer wins', async () => {
  const batch = new AnswerBatch();
  const srv = await collectingServer(4, (held) => {
    const byPath = new Map(held.map((h) => [h.req.url, h]));
    batch.send(byPath.get('/bad')!.res, 200, { ok: true }, undefined, { 'x-bad': 'a\nb' });
    byPath.get('/gone')!.req.socket.destroy();
    batch.send(byPath.get('/gone')!.res, 200, { ok: true });
    batch.send(byPath.get('/twice')!.res, 201, { first: true });
    batch.send(byPath.get('/twice')!.res, 500, { second: true });
    batch.send(byPath.get('/ok')!.res, 200, { ok: true });
  });
  try {
    const [bad, gone, twice, ok] = await Promise.all(['/bad', '/gone', '/twice', '/ok'].map((p) => srv.get(p)));
    assert.equal(bad, 'cut off');
    assert.equal(gone, 'cut off');
    assert.deepEqual(twice, { status: 201, body: '{"first":true}' });
    assert.deepEqual(ok, { status: 200, body: '{"ok":true}' });
  } finally {
    await srv.close();
  }
});

test('batches are owned by their plugin: one with nothing waiting settles before another writes', async () => {
  const mine = new AnswerBatch();
  const theirs = new AnswerBatch();
  const seen: { theirsSettled: boolean; mineWritten: boolean }[] = [];
  const srv = await collectingServer(1, ([held]) => {
    mine.send(held!.res, 200, { mine: true });
    void theirs.written().then(() => seen.push({ theirsSettled: true, mineWritten: held!.res.headersSent }));
  });
  try {
    assert.deepEqual(await srv.get('/'), { status: 200, body: '{"mine":true}' });
    assert.deepEqual(seen, [{ theirsSettled: true, mineWritten: false }]);
  } finally {
    await srv.close();
  }
});
