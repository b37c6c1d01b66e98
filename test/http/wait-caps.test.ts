// hooks.maxWaitingRequests over loopback: a waitForCompletion request past the waits one client
// address may hold (32 by default), or past the waits of all clients together, is answered at once as
// if it had not asked to wait (202 { ok, runId }), never refused; its run goes on. Clients are told
// apart by their source address (127.0.0.1 and 127.0.0.2, both loopback).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { HOOK_TOKEN, withGateway, type TestGateway } from '../helpers/recording-host.ts';
import { waitUntil } from '../helpers/common.ts';

interface Answer {
  status: number;
  body: any;
}

/** POSTs a waited /hooks/agent request from `from` (a loopback address), on a connection of its own. */
function waitFrom(gw: TestGateway, from: string, message: string): Promise<Answer> {
  const body = JSON.stringify({ message, deliver: false, waitForCompletion: true });
  return new Promise((resolve, reject) => {
    const req = request(
      `${gw.url}/hooks/agent`,
      {
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Every run blocks until released: their waits stay under way meanwhile. */
function blockingTurns(): { turn: () => Promise<{ status: 'ok'; reply: string }>; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return {
    turn: async () => {
      await released;
      return { status: 'ok', reply: 'done' };
    },
    release,
  };
}

const underWay = (gw: TestGateway, n: number): Promise<void> =>
  waitUntil(() => gw.plugin.runs.running + gw.plugin.runs.queued === n, `${n} runs accepted`);

test('past 32 waits from one address, the next is answered 202 at once; another address still waits', async () => {
  const { turn, release } = blockingTurns();
  // A wait that ended at its bound would answer { status: 'running' }: the bound is far off.
  await withGateway({ hooks: { maxWaitSeconds: 600 }, turn }, async (gw) => {
    const waits = Array.from({ length: 32 }, (_, i) => waitFrom(gw, '127.0.0.1', `wait ${i}`));
    await underWay(gw, 32);
    const over = await waitFrom(gw, '127.0.0.1', 'the 33rd');
    assert.equal(over.status, 202);
    assert.deepEqual(over.body, { ok: true, runId: over.body.runId }, 'as if it had not asked to wait');
    const other = waitFrom(gw, '127.0.0.2', 'another client');
    await underWay(gw, 34);
    release();
    for (const answer of [...(await Promise.all(waits)), await other]) {
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.status, 'ok');
    }
    // The run of the request that did not wait ran all the same.
    await gw.finalRun(over.body.runId);
  });
});

test('past the waits of all clients together (maxWaitingRequests.total), any client is answered 202 at once', async () => {
  const { turn, release } = blockingTurns();
  await withGateway(
    { hooks: { maxWaitSeconds: 600, maxWaitingRequests: { total: 4, perClient: 3 } }, turn },
    async (gw) => {
      const waits = [
        ...Array.from({ length: 3 }, (_, i) => waitFrom(gw, '127.0.0.1', `first ${i}`)),
        waitFrom(gw, '127.0.0.2', 'second'),
      ];
      await underWay(gw, 4);
      for (const from of ['127.0.0.2', '127.0.0.3']) {
        const over = await waitFrom(gw, from, `over from ${from}`);
        assert.equal(over.status, 202);
        assert.deepEqual(over.body, { ok: true, runId: over.body.runId });
      }
      release();
      for (const answer of await Promise.all(waits)) assert.equal(answer.body.status, 'ok');
      // Slots free as waits end: the next waited request waits again.
      const after = await waitFrom(gw, '127.0.0.3', 'after');
      assert.equal(after.status, 200);
      assert.equal(after.body.status, 'ok');
    },
  );
});
