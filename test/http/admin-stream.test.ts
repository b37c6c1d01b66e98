// A live tail's events on the wire (plugin/admin/admin-answer.ts), over a real loopback server:
// the events of a gathering window go out together, whole and in order, at most MAX_EVENTS_PER_WRITE
// of them and a count of the rest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_EVENTS_PER_WRITE, serveAdminStream } from '../../plugin/admin/admin-answer.ts';
import { AdminStream, JsonText, type SendEvent } from '../../plugin/admin/admin-call.ts';

/** A loopback server whose one route serves a live stream; `sender()` is its send once a client came. */
async function streamServer(onWrite?: () => void) {
  let send: SendEvent | undefined;
  const server = createServer((_req, res: ServerResponse) => {
    if (onWrite) {
      const write = res.write.bind(res) as (chunk: string) => boolean;
      res.write = ((chunk: string) => {
        onWrite();
        return write(chunk);
      }) as typeof res.write;
    }
    void serveAdminStream(
      res,
      new AdminStream((s) => {
        send = s;
        return () => (send = undefined);
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    sender: () => send!,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test('events sent turn after turn within the gathering window go out together, in order', async () => {
  let writes = 0;
  const server = await streamServer(() => writes++);
  const controller = new AbortController();
  try {
    const res = await fetch(server.url, { signal: controller.signal });
    const send = server.sender();
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes(': hookgate live')) text += new TextDecoder().decode((await reader.read()).value);
    const before = writes;
    // Twenty events, each in a turn of its own.
    for (let i = 0; i < 20; i++) {
      assert.ok(send('request', { n: i }));
      await new Promise((resolve) => setImmediate(resolve));
    }
    while (!text.includes('"n":19')) text += new TextDecoder().decode((await reader.read()).value);
    // One write for the window; a busy host may split it (a write a turn made twenty).
    assert.ok(writes - before <= 3, `${writes - before} writes`);
    const data = [...text.matchAll(/^data: (.*)$/gm)].map((m) => (JSON.parse(m[1]!) as { n: number }).n);
    assert.deepEqual(
      data,
      Array.from({ length: 20 }, (_, i) => i),
    );
  } finally {
    controller.abort();
    await server.close();
  }
});

test('past its cap a write carries the first events and one "skipped" event counting the rest', async () => {
  const server = await streamServer();
  const controller = new AbortController();
  try {
    const res = await fetch(server.url, { signal: controller.signal });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes(': hookgate live')) text += new TextDecoder().decode((await reader.read()).value);
    // In one turn: one gathering window.
    const total = MAX_EVENTS_PER_WRITE + 70;
    const send = server.sender();
    // Each event's JSON made only if it is sent: a flood's tail serializes no skipped entry.
    let made = 0;
    for (let i = 0; i < total; i++) {
      const json = new JsonText(() => {
        made++;
        return JSON.stringify({ n: i });
      });
      assert.ok(send('request', json));
    }
    assert.equal(made, MAX_EVENTS_PER_WRITE);
    while (!text.includes('event: skipped')) text += new TextDecoder().decode((await reader.read()).value);
    while (!text.endsWith('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    const shown = [...text.matchAll(/^event: request\ndata: (.*)$/gm)].map(
      (m) => (JSON.parse(m[1]!) as { n: number }).n,
    );
    assert.deepEqual(
      shown,
      Array.from({ length: MAX_EVENTS_PER_WRITE }, (_, i) => i),
    );
    assert.match(text, /event: skipped\ndata: \{"count":70\}\n\n$/);
  } finally {
    controller.abort();
    await server.close();
  }
});
