// A signed mapping's request that carries none of its scheme's proof headers is refused before its
// body is read: 401 signature_invalid at once, counted against the address like any failed proof.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { post, withGateway } from '../helpers/recording-host.ts';
import { assertError, waitUntil } from '../helpers/common.ts';

const SECRET = 'github-secret-0123456789';
const signed = {
  id: 'gh',
  match: { path: 'gh' },
  action: 'wake',
  textTemplate: 'event {{n}}',
  allowUnsafeExternalContent: true,
  verify: { scheme: 'github', secret: SECRET },
};

/** Sends the head and only part of a body that claims `length` bytes; resolves with what comes back. */
function partialUpload(url: string, headers: Record<string, string>, length: number): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let received = '';
    socket.on('data', (d) => {
      received += d.toString('latin1');
      if (received.includes('\r\n\r\n') && received.includes('}')) resolve(received);
    });
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
    const head = Object.entries({ ...headers, 'content-length': String(length) })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    socket.write(`POST /hooks/gh HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${head}\r\n{"n":`);
  });
}

test('no proof header: 401 signature_invalid before the body has arrived, and the socket closes', async () => {
  await withGateway({ hooks: { mappings: [signed] } }, async (gw) => {
    // The body never completes: only an answer decided before the body can come back.
    const answer = await partialUpload(gw.url, {}, 1_000_000);
    assert.match(answer, /^HTTP\/1\.1 401 /);
    assert.match(answer, /"code":"signature_invalid"/);
    assert.match(answer, /connection: close/i);
    await waitUntil(() => gw.plugin.requests.size === 1, 'the refusal in the request log');
    const logged = (await gw.plugin.requests.page({}, 1)).requests[0]!;
    assert.equal(logged.code, 'signature_invalid');
    assert.equal(logged.bytes, 0, 'the body was not read');

    // A proof header, even a wrong one, still waits for the body: the HMAC needs it.
    const body = JSON.stringify({ n: 1 });
    const good = await post(gw.url, '/hooks/gh', undefined, {
      rawBody: body,
      token: null,
      headers: { 'x-hub-signature-256': await githubSign(SECRET, body) },
    });
    assert.equal(good.status, 200);
    assert.equal(gw.rec.events.at(-1)!.text, 'event 1');
  });
});

test('requests without a proof header count as authentication failures', async () => {
  await withGateway({ hooks: { mappings: [signed] } }, async (gw) => {
    for (let i = 0; i < 3; i++) {
      // The hook token is no proof for a signed mapping.
      assertError(await post(gw.url, '/hooks/gh', { n: i }), 401, 'signature_invalid');
    }
    const { text } = await gw.plugin.metrics.exposition();
    assert.match(text, /^hookgate_auth_failures_total 3$/m);
    assert.match(text, /^hookgate_signature_failures_total\{scheme="github"\} 3$/m);
    assert.equal(gw.rec.events.length, 0);
  });
});
