// BodyReceiver.read keeps its promise contract: a declared length over the limit is a rejected
// promise (never a synchronous throw), and nothing is read or continued.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { BodyReceiver } from '../../plugin/http/body.ts';
import { HookError } from '../../plugin/errors.ts';

test('a declared length over the limit rejects the promise read() returns; it does not throw', async () => {
  const bodies = new BodyReceiver();
  const outcomes: { threw: boolean; rejection?: unknown }[] = [];
  const server = createServer((req, res) => {
    let pending: Promise<Buffer>;
    try {
      pending = bodies.read(req, res, 10, 1000);
    } catch (err) {
      outcomes.push({ threw: true, rejection: err });
      res.end();
      return;
    }
    pending.then(
      () => {
        outcomes.push({ threw: false });
        res.end();
      },
      (err: unknown) => {
        outcomes.push({ threw: false, rejection: err });
        res.end();
      },
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const req = request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-length': '100' } });
    req.on('error', () => {});
    req.end('x'.repeat(100));
    const [res] = (await once(req, 'response')) as [NodeJS.ReadableStream];
    res.resume();
    await once(res, 'end');
    assert.equal(outcomes.length, 1);
    assert.equal(outcomes[0]!.threw, false);
    const refusal = outcomes[0]!.rejection;
    assert.ok(refusal instanceof HookError);
    assert.equal(refusal.status, 413);
    assert.equal(refusal.code, 'payload_too_large');
  } finally {
    bodies.close();
    server.close();
  }
});
