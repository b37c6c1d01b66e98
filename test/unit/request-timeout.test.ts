// The gateway's server.requestTimeout (120 s) must not cut a waitForCompletion answer (hooks.maxWaitSeconds
// up to 3600): Node applies it to receiving the request only. A guard that fails if Node changes that.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { waitUntil } from '../helpers/common.ts';

test("Node's requestTimeout bounds receiving a request, not the answer to a complete one", async () => {
  let answer: (() => void) | undefined;
  const server = createServer(
    { requestTimeout: 300, headersTimeout: 300, connectionsCheckingInterval: 50 },
    (req, res) => {
      req.resume();
      req.on('end', () => (answer = () => res.end('late')));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const pending = fetch(url, { method: 'POST', body: 'x' });
    await waitUntil(() => answer !== undefined, 'the request received');
    // Past the timeout, several checks later: the request is still open, then answered.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    answer!();
    const res = await pending;
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'late');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
