// A reload swaps the config for the next request; a request already in flight finishes on the
// snapshot it started with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { GATEWAY_TOKEN, HOOK_TOKEN, post, startTestGateway } from '../helpers/recording-host.ts';

const config = (version: string) =>
  JSON.stringify({
    gateway: { auth: { token: GATEWAY_TOKEN } },
    hooks: {
      enabled: true,
      token: HOOK_TOKEN,
      mappings: [
        {
          id: 'ci',
          match: { path: 'ci' },
          action: 'wake',
          allowUnsafeExternalContent: true,
          textTemplate: `${version} {{n}}`,
        },
      ],
    },
  });

test('a request whose body is still arriving during a reload is served by the config it started under', async () => {
  const gw = await startTestGateway({ hooks: JSON.parse(config('old')).hooks });
  try {
    const { port } = new URL(gw.url);
    const body = '{"n":1}';
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/hooks/ci',
      method: 'POST',
      headers: {
        authorization: `Bearer ${HOOK_TOKEN}`,
        'content-length': String(body.length),
        // The 100 goes out once the server has handed the request to the hooks.
        expect: '100-continue',
      },
    });
    const handed = new Promise<void>((resolve) => req.once('continue', () => resolve()));
    const answered = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });
    req.flushHeaders();
    await handed;
    req.write(body.slice(0, 3));

    await writeFile(gw.configPath, config('new'));
    const reloaded = await gw.plugin.reload();
    assert.ok(reloaded.ok);
    // A new request already sees the new config...
    assert.equal((await post(gw.url, '/hooks/ci', { n: 2 })).status, 200);
    assert.equal(gw.rec.events.at(-1)!.text, 'new 2');

    // ...while the one in flight completes under the old one.
    req.end(body.slice(3));
    assert.equal(await answered, 200);
    assert.equal(gw.rec.events.at(-1)!.text, 'old 1');
  } finally {
    await gw.close();
  }
});
