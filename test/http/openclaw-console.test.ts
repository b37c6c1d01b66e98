// The console as OpenClaw mounts it under /hookgate/ui/ (service.ts): its files, the login with the
// gateway token OpenClaw's config names, the cookie's Path, and the page's calls answered by the same
// admin function as /hookgate/api/ (and the agent tools). A real OpenClaw serving it is
// test-openclaw/console.ts's part; this drives the door on a loopback server around a real plugin.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { answerAdminCall, openClawAdmin } from '../../plugin/hosts/openclaw/admin-api.ts';
import { CONSOLE_PATH } from '../../plugin/hosts/openclaw/identity.ts';
import { RecentRuns } from '../../plugin/hosts/openclaw/recent-runs.ts';
import { ConsoleDoor } from '../../plugin/kits/console.ts';
import { GATEWAY_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway } from '../helpers/recording-host.ts';
import { login, send } from '../helpers/console-client.ts';

let gw: TestGateway;
let server: Server;
let base: string;

before(async () => {
  gw = await startTestGateway();
  const ask = openClawAdmin(gw.plugin, new RecentRuns(3));
  const door = new ConsoleDoor({
    mount: `${CONSOLE_PATH}/`,
    settings: () => gw.plugin.snapshot().console,
    ownerToken: () => gw.plugin.snapshot().ownerToken,
    trustedProxies: () => gw.plugin.snapshot().trustedProxies,
    lockout: gw.plugin.lockout,
    api: (req, res, rest) => answerAdminCall(ask, req, res, rest, gw.host.logger),
    logger: gw.host.logger,
  });
  server = createServer((req, res) => void door.handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server?.close();
  await gw?.close();
});

test('under /hookgate/ui/: the login form, the gateway token (not the hook token), a cookie for that path only', async () => {
  const form = await send(base, 'GET', '/hookgate/ui/');
  assert.equal(form.status, 200);
  assert.match(form.text, /<form id="login"/);
  assert.equal(form.headers['content-security-policy'], "default-src 'self'; frame-ancestors 'none'");
  await assert.rejects(login(base, HOOK_TOKEN, '/hookgate/ui/'), /401/);
  const origin = new URL(base).origin;
  const ok = await send(
    base,
    'POST',
    '/hookgate/ui/login',
    { origin, 'content-type': 'application/json' },
    JSON.stringify({ token: GATEWAY_TOKEN }),
  );
  assert.equal(ok.status, 200);
  assert.match(String(ok.headers['set-cookie']), /; Path=\/hookgate\/ui\/; HttpOnly; SameSite=Strict;/);
});

test('the page and its calls: /hookgate/ui/api/ answers as /hookgate/api/, a change needs the anti-forgery token', async () => {
  const client = await login(base, GATEWAY_TOKEN, '/hookgate/ui/');
  assert.match((await client.get('')).text, /<nav aria-label="Views">/);
  const hooks = await client.get('api/hooks');
  assert.equal(hooks.status, 200);
  assert.deepEqual(
    hooks.json().hooks.map((h: { name: string }) => h.name),
    ['wake', 'agent'],
  );
  const forged = await send(base, 'POST', '/hookgate/ui/api/hooks/wake/pause', {
    cookie: client.cookie,
    origin: client.origin,
  });
  assert.equal(forged.status, 403);
  const paused = await client.post('api/hooks/wake/pause');
  assert.equal(paused.status, 200);
  assert.equal(paused.json().paused, true);
  assert.equal((await client.post('api/hooks/wake/resume')).json().paused, false);
});
