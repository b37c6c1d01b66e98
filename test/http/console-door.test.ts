// The console's door on the standalone gateway's real HTTP server: the login form without a
// session, the login with the gateway token (never the hook token) and its cookie, wrong logins
// counted toward the hooks' lockout, the anti-forgery token and same-origin check on every change,
// /ui/api/ answered by the admin API while /api/ keeps refusing the cookie, sessions ended by a new
// gateway token and by logout, Secure behind a trusted https proxy, the safety headers, no secret in
// a log line, and hooks.console.enabled: false.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startGateway, type RunningGateway } from '../../plugin/hosts/standalone/server/gateway.ts';
import type { Logger } from '../../plugin/host.ts';
import { GATEWAY_TOKEN, HOOK_TOKEN, ROOT, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { login, send } from '../helpers/console-client.ts';

interface Fixture {
  gw: RunningGateway;
  base: string;
  origin: string;
  configPath: string;
  lines: string[];
}

async function withConsole(extra: Record<string, unknown>, body: (f: Fixture) => Promise<void>): Promise<void> {
  const stateDir = await tempStateDir();
  const configPath = await writeConfig(stateDir, extra);
  const lines: string[] = [];
  const record =
    (level: string) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
    };
  const logger: Logger = { info: record('info'), warn: record('warn'), error: record('error') };
  const gw = await startGateway({ configPath, stateDir, port: 0, host: '127.0.0.1', logger, gmail: false });
  try {
    await body({ gw, base: gw.url, origin: new URL(gw.url).origin, configPath, lines });
  } finally {
    await gw.close();
  }
}

const SAFETY = {
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

function assertSafetyHeaders(headers: Record<string, unknown>, what: string): void {
  for (const [name, value] of Object.entries(SAFETY)) assert.equal(headers[name], value, `${what}: ${name}`);
}

test('without a session /ui/ is the login form; the page, its files and every answer carry the safety headers', async () => {
  await withConsole({}, async ({ base, gw }) => {
    const page = await send(base, 'GET', '/ui/');
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(page.text, /<form id="login"/);
    assert.match(page.text, /<label for="token">Gateway token<\/label>/);
    assert.doesNotMatch(page.text, /<script>|\sstyle=|\son[a-z]+="/, 'no inline script, style or handler');
    assertSafetyHeaders(page.headers, 'the login page');
    const script = await send(base, 'GET', '/ui/js/app.js');
    assert.equal(script.status, 200);
    assert.match(String(script.headers['content-type']), /^text\/javascript/);
    assertSafetyHeaders(script.headers, 'a script');
    const refused = await send(base, 'GET', '/ui/api/hooks');
    assert.equal(refused.status, 401);
    assertSafetyHeaders(refused.headers, 'a refusal');
    const bare = await send(base, 'GET', '/ui');
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.location, '/ui/');
    // Only the console's own files: no way out of its folder, no other file of the package.
    for (const path of [
      '/ui/%2e%2e/package.json',
      '/ui/..%2fpackage.json',
      '/ui/js/../../package.json',
      '/ui/.hidden.js',
    ])
      assert.equal((await send(base, 'GET', path)).status, 404, path);
    assert.equal(gw.plugin.snapshot().console.enabled, true);
  });
});

test("the pages name their files under the files' version, kept for good there; another version's address is 404", async () => {
  await withConsole({}, async ({ base }) => {
    const files = await readdir(path.join(ROOT, 'console'), { recursive: true });
    const form = await send(base, 'GET', '/ui/');
    assert.equal(form.headers['cache-control'], 'no-store', 'the page itself is never kept');
    const loginScript = /<script type="module" src="v\/([0-9a-f]{12})\/js\/login\.js">/.exec(form.text);
    assert.ok(loginScript, `login.html names its script under the version: ${form.text}`);
    const version = loginScript[1]!;
    assert.match(form.text, new RegExp(`<link rel="stylesheet" href="v/${version}/style.css" />`));
    const client = await login(base, GATEWAY_TOKEN);
    const page = await client.get('');
    // Every file the page names is under the same version: none is asked for again on a later
    // visit.
    const named = [...page.text.matchAll(/\s(?:href|src)="([^"#]+)"/g)].map((m) => m[1]!);
    assert.ok(named.length >= 10, `the page names its files: ${named.join(', ')}`);
    for (const name of named) assert.ok(name.startsWith(`v/${version}/`), `${name} is not under the version`);
    for (const name of ['js/app.js', 'js/views/requests.js', 'style.css']) {
      assert.ok(files.includes(name.split('/').join(path.sep)), name);
      const kept = await send(base, 'GET', `/ui/v/${version}/${name}`);
      assert.equal(kept.status, 200, name);
      assert.equal(kept.headers['cache-control'], 'public, max-age=31536000, immutable', name);
      assertSafetyHeaders(kept.headers, name);
      const plain = await send(base, 'GET', `/ui/${name}`);
      assert.equal(kept.text, plain.text, `${name}: the same bytes at both addresses`);
      assert.equal(plain.headers['cache-control'], 'no-cache', `${name} at its plain address is checked each time`);
    }
    for (const wrong of ['/ui/v/0123456789ab/js/app.js', `/ui/v/${version}/index.html`, `/ui/v/${version}/js/nope.js`])
      assert.equal((await send(base, 'GET', wrong)).status, 404, wrong);
  });
});

test('the login takes the gateway token, never the hook token, from the console page only; its cookie is HttpOnly, SameSite=Strict, Path=/ui/', async () => {
  await withConsole({}, async ({ base, origin, lines }) => {
    const json = { 'content-type': 'application/json' };
    const hookToken = await send(base, 'POST', '/ui/login', { ...json, origin }, JSON.stringify({ token: HOOK_TOKEN }));
    assert.equal(hookToken.status, 401);
    assert.equal(hookToken.json().code, 'unauthorized');
    assert.equal(hookToken.headers['set-cookie'], undefined);
    const elsewhere = await send(
      base,
      'POST',
      '/ui/login',
      { ...json, origin: 'http://evil.example' },
      JSON.stringify({ token: GATEWAY_TOKEN }),
    );
    assert.equal(elsewhere.status, 403);
    assert.equal(elsewhere.json().code, 'forbidden');
    assert.equal(elsewhere.headers['set-cookie'], undefined);
    const noOrigin = await send(base, 'POST', '/ui/login', json, JSON.stringify({ token: GATEWAY_TOKEN }));
    assert.equal(noOrigin.status, 403);

    const ok = await send(base, 'POST', '/ui/login', { ...json, origin }, JSON.stringify({ token: GATEWAY_TOKEN }));
    assert.equal(ok.status, 200);
    const cookie = String(([] as string[]).concat(ok.headers['set-cookie'] ?? [])[0]);
    assert.match(cookie, /^hookgate_session=[A-Za-z0-9_-]{43}; Path=\/ui\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    assert.doesNotMatch(ok.text, new RegExp(GATEWAY_TOKEN));
    const sessionId = cookie.split(';', 1)[0]!.split('=')[1]!;

    const client = await login(base, GATEWAY_TOKEN);
    const page = await client.get('');
    assert.match(page.text, /<nav aria-label="Views">/, 'with a session /ui/ is the page');
    assert.doesNotMatch(page.text, new RegExp(`${client.csrf}|${sessionId}|${GATEWAY_TOKEN}`));
    // Nothing secret in any log line: token, cookie value, anti-forgery token.
    for (const line of lines) {
      for (const secret of [GATEWAY_TOKEN, HOOK_TOKEN, sessionId, client.csrf]) assert.ok(!line.includes(secret), line);
    }
    assert.ok(lines.some((line) => line.startsWith('info console login')));
  });
});

test('/ui/api/ answers with the admin API for a session; /api/ refuses the cookie and keeps the bearer token', async () => {
  await withConsole({}, async ({ base }) => {
    const client = await login(base, GATEWAY_TOKEN);
    const hooks = await client.get('api/hooks');
    assert.equal(hooks.status, 200);
    assert.deepEqual(
      hooks.json().hooks.map((h: { name: string }) => h.name),
      ['wake', 'agent'],
    );
    assert.equal(hooks.headers['cache-control'], 'no-store');
    const withCookie = await send(base, 'GET', '/api/hooks', { cookie: client.cookie });
    assert.equal(withCookie.status, 401);
    const withBearer = await send(base, 'GET', '/api/hooks', { authorization: `Bearer ${GATEWAY_TOKEN}` });
    assert.equal(withBearer.status, 200);
    // The bearer token is no session: /ui/api/ takes only the cookie.
    const bearerAtUi = await send(base, 'GET', '/ui/api/hooks', { authorization: `Bearer ${GATEWAY_TOKEN}` });
    assert.equal(bearerAtUi.status, 401);
  });
});

test('a change without the anti-forgery token, or from another origin, is 403 forbidden and changes nothing', async () => {
  await withConsole({}, async ({ base }) => {
    const client = await login(base, GATEWAY_TOKEN);
    const paused = async (): Promise<boolean> =>
      (await client.get('api/hooks')).json().hooks.find((h: { name: string }) => h.name === 'wake').paused;
    const noToken = await send(base, 'POST', '/ui/api/hooks/wake/pause', {
      cookie: client.cookie,
      origin: client.origin,
    });
    assert.equal(noToken.status, 403);
    assert.equal(noToken.json().code, 'forbidden');
    const wrongToken = await client.post('api/hooks/wake/pause', undefined, { 'x-hookgate-csrf': 'x'.repeat(43) });
    assert.equal(wrongToken.status, 403);
    const otherOrigin = await client.post('api/hooks/wake/pause', undefined, { origin: 'http://evil.example' });
    assert.equal(otherOrigin.status, 403);
    const noOrigin = await send(base, 'POST', '/ui/api/hooks/wake/pause', {
      cookie: client.cookie,
      'x-hookgate-csrf': client.csrf,
    });
    assert.equal(noOrigin.status, 403);
    assert.equal(await paused(), false, 'nothing changed');
    const done = await client.post('api/hooks/wake/pause');
    assert.equal(done.status, 200);
    assert.equal(await paused(), true);
  });
});

test('wrong logins count toward the address lockout the hooks use', async () => {
  await withConsole(
    { hooks: { authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 } } },
    async ({ base, origin }) => {
      const json = { 'content-type': 'application/json', origin };
      for (let i = 0; i < 3; i++) {
        const wrong = await send(base, 'POST', '/ui/login', json, JSON.stringify({ token: `wrong-${i}` }));
        assert.equal(wrong.status, 401);
      }
      const locked = await send(base, 'POST', '/ui/login', json, JSON.stringify({ token: GATEWAY_TOKEN }));
      assert.equal(locked.status, 429);
      assert.equal(locked.json().code, 'rate_limited');
      const hook = await send(
        base,
        'POST',
        '/hooks/wake',
        { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
        JSON.stringify({ text: 'hi' }),
      );
      assert.equal(hook.status, 429, 'the hooks see the same lockout');
    },
  );
});

test('a new gateway token ends every session; logout ends its own', async () => {
  await withConsole({}, async ({ base, gw, configPath }) => {
    const first = await login(base, GATEWAY_TOKEN);
    const second = await login(base, GATEWAY_TOKEN);
    const out = await second.post('logout');
    assert.equal(out.status, 200);
    assert.match(
      String(out.headers['set-cookie']),
      /^hookgate_session=; Path=\/ui\/; HttpOnly; SameSite=Strict; Max-Age=0/,
    );
    assert.equal((await second.get('api/session')).status, 401);
    assert.equal((await first.get('api/session')).status, 200);

    const config = JSON.parse(await readFile(configPath, 'utf8'));
    config.gateway.auth.token = 'a-brand-new-gateway-token-0123456789';
    await writeFile(configPath, JSON.stringify(config));
    const reloaded = await gw.plugin.reload();
    assert.equal(reloaded.ok, true);
    assert.equal((await first.get('api/session')).status, 401, 'the old session ended');
    assert.match((await first.get('')).text, /<form id="login"/);
    await assert.rejects(login(base, GATEWAY_TOKEN), /401/);
    const fresh = await login(base, 'a-brand-new-gateway-token-0123456789');
    assert.equal((await fresh.get('api/session')).status, 200);
  });
});

test('the cookie is Secure when a trusted proxy says the browser came over https, not when anyone else says it', async () => {
  await withConsole({ gateway: { trustedProxies: ['127.0.0.1'] } }, async ({ base }) => {
    const body = JSON.stringify({ token: GATEWAY_TOKEN });
    const viaProxy = await send(
      base,
      'POST',
      '/ui/login',
      {
        'content-type': 'application/json',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'console.example',
        origin: 'https://console.example',
      },
      body,
    );
    assert.equal(viaProxy.status, 200);
    assert.match(String(viaProxy.headers['set-cookie']), /; Secure$/);
  });
  await withConsole({}, async ({ base, origin }) => {
    const spoofed = await send(
      base,
      'POST',
      '/ui/login',
      { 'content-type': 'application/json', 'x-forwarded-proto': 'https', origin },
      JSON.stringify({ token: GATEWAY_TOKEN }),
    );
    assert.equal(spoofed.status, 200);
    assert.doesNotMatch(String(spoofed.headers['set-cookie']), /Secure/);
  });
});

test('hooks.console.enabled: false answers 404 under /ui/', async () => {
  await withConsole({ hooks: { console: { enabled: false } } }, async ({ base, origin }) => {
    assert.equal((await send(base, 'GET', '/ui/')).status, 404);
    assert.equal((await send(base, 'GET', '/ui/js/app.js')).status, 404);
    const loginAnswer = await send(
      base,
      'POST',
      '/ui/login',
      { 'content-type': 'application/json', origin },
      JSON.stringify({ token: GATEWAY_TOKEN }),
    );
    assert.equal(loginAnswer.status, 404);
    assert.equal(loginAnswer.headers['set-cookie'], undefined);
  });
});

test('hooks.console.sessionHours sets how long a login lasts', async () => {
  await withConsole({ hooks: { console: { sessionHours: 1 } } }, async ({ base, origin }) => {
    const ok = await send(
      base,
      'POST',
      '/ui/login',
      { 'content-type': 'application/json', origin },
      JSON.stringify({ token: GATEWAY_TOKEN }),
    );
    assert.match(String(ok.headers['set-cookie']), /Max-Age=3600/);
    const expires = Date.parse(ok.json().expiresAt);
    assert.ok(Math.abs(expires - Date.now() - 3_600_000) < 120_000);
  });
});
