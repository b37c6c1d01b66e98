// Unit tests of plugin/config: resolveHooksConfig on the standalone layout, readConfigFile on temp files.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../plugin/errors.ts';
import { readConfigFile } from '../../plugin/config/load.ts';
import { resolveHooksConfig, selectStandaloneConfig, type HooksSettings } from '../../plugin/config/hooks-config.ts';

const TOKEN = 'hook-token-for-config-tests';
const CONFIG_DIR = path.resolve(tmpdir(), 'hookgate-config-test-dir');
const TRANSFORMS_ROOT = path.join(CONFIG_DIR, 'hooks', 'transforms');

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'hookgate-config-'));
});
after(() => rm(dir, { recursive: true, force: true }));

function resolve(file: Record<string, unknown>): HooksSettings {
  return resolveHooksConfig(selectStandaloneConfig(file), CONFIG_DIR, '/etc/hookgate/gateway.json5');
}

function hooks(h: Record<string, unknown>, rest: Record<string, unknown> = {}): HooksSettings {
  return resolve({ hooks: { enabled: true, token: TOKEN, ...h }, ...rest });
}

/** Runs fn, expects a ConfigError, returns its problems. */
function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    assert.ok(err.problems.length > 0);
    for (const p of err.problems) assert.ok(err.message.includes(p), 'the message lists every problem');
    return err.problems;
  }
  assert.fail('expected a ConfigError');
}

async function tempFile(name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, text);
  return file;
}

// ---------------------------------------------------------------------------
// Schema errors

test('every schema error is reported at once, with its key path', () => {
  const problems = problemsOf(() =>
    hooks({
      allowedAgentIds: ['main', 'ops', 3],
      surprise: true,
      maxBodyBytes: 'big',
      authRateLimit: { maxFailures: 0, lockout: 5 },
      allowRequestSessionKey: 'yes',
    }),
  );
  const expected = [
    'hooks.allowedAgentIds[2] must be a string',
    'hooks.surprise is not a known field',
    'hooks.maxBodyBytes must be an integer',
    'hooks.authRateLimit.maxFailures must be at least 1',
    'hooks.authRateLimit.lockout is not a known field',
    'hooks.allowRequestSessionKey must be a boolean',
  ];
  for (const e of expected) assert.ok(problems.includes(e), `missing "${e}" in ${JSON.stringify(problems)}`);
  assert.equal(problems.length, new Set(problems).size, 'no duplicates');
});

test('schema errors carry the file name; a hooks block that is not an object is refused', () => {
  try {
    hooks({ token: 42 });
    assert.fail('expected a ConfigError');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.file, '/etc/hookgate/gateway.json5');
    assert.match(err.message, /^\/etc\/hookgate\/gateway\.json5: invalid config/);
    assert.deepEqual(err.problems, ['hooks.token must be a string or an array']);
  }
  assert.deepEqual(
    problemsOf(() => resolve({ hooks: [] })),
    ['hooks must be an object'],
  );
  assert.deepEqual(
    problemsOf(() => resolve({ hooks: 'on' })),
    ['hooks must be an object'],
  );
});

// ---------------------------------------------------------------------------
// hooks.path

test('hooks.path is normalised: trimmed, one leading slash, no trailing slash', () => {
  const cases: [string, string][] = [
    ['/hooks', '/hooks'],
    ['hooks/', '/hooks'],
    [' /hooks/ ', '/hooks'],
    ['//x//', '/x'],
    ['webhooks', '/webhooks'],
    ['/api/hooks/', '/api/hooks'],
    ['\t/in\n', '/in'],
  ];
  for (const [raw, want] of cases) assert.equal(hooks({ path: raw }).path, want, JSON.stringify(raw));
  assert.equal(hooks({}).path, '/hooks', 'default');
});

test('hooks.path "/" (or nothing but slashes and blanks) is refused, naming hooks.path', () => {
  for (const raw of ['/', '///', ' / ', '   ']) {
    const problems = problemsOf(() => hooks({ path: raw }));
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^hooks\.path /);
  }
  assert.match(problemsOf(() => hooks({ path: '' }))[0]!, /^hooks\.path /);
});

test('hooks.path with traversal, doubled slashes, a query or blanks inside is refused', () => {
  for (const raw of ['/a/../b', '/a//b', '/hooks?x=1', '/ho oks', '/a/./b', '/hooks#frag', '/a%2e%2e']) {
    assert.match(problemsOf(() => hooks({ path: raw }))[0]!, /^hooks\.path /, raw);
  }
});

// ---------------------------------------------------------------------------
// Token

test('a token is required when hooks are enabled; the message names hooks.token', () => {
  for (const h of [{ token: undefined }, { token: '   ' }]) {
    const problems = problemsOf(() => resolve({ hooks: { enabled: true, ...h } }));
    assert.ok(
      problems.some((p) => p.includes('hooks.token')),
      JSON.stringify(problems),
    );
  }
  // Disabled hooks need no token.
  assert.equal(resolve({ hooks: { enabled: false } }).enabled, false);
  assert.equal(resolve({}).enabled, false);
});

test('the hook token may not equal gateway.auth.token', () => {
  const gateway = { auth: { token: TOKEN } };
  const problems = problemsOf(() => hooks({}, { gateway }));
  assert.ok(
    problems.some((p) => p.includes('hooks.token') && p.includes('gateway.auth.token')),
    JSON.stringify(problems),
  );
  // Surrounding blanks do not make it different.
  assert.ok(problemsOf(() => hooks({ token: ` ${TOKEN} ` }, { gateway })).length > 0);
  assert.ok(problemsOf(() => hooks({}, { gateway: { auth: { token: `${TOKEN}\n` } } })).length > 0);
  // A different gateway token is fine.
  assert.equal(hooks({}, { gateway: { auth: { token: 'another-token' } } }).enabled, true);
});

test('a hook token shorter than 16 bytes is refused, naming the key it came from', async () => {
  const rule = 'must be at least 16 bytes (use a random value, e.g. `openssl rand -hex 32`)';
  assert.deepEqual(
    problemsOf(() => hooks({ token: 'short' })),
    [`hooks.token ${rule}`],
  );
  assert.deepEqual(
    problemsOf(() => hooks({ token: [TOKEN, '0123456789abcde'] })),
    [`hooks.token[1] ${rule}`],
  );
  await writeFile(path.join(dir, 'short-token'), 'abc\n');
  assert.deepEqual(
    problemsOf(() =>
      resolveHooksConfig(
        selectStandaloneConfig({ hooks: { enabled: true, tokenFile: path.join(dir, 'short-token') } }),
        CONFIG_DIR,
        'x',
      ),
    ),
    [`hooks.tokenFile ${rule}`],
  );
  assert.equal(hooks({ token: '0123456789abcdef' }).enabled, true);
});

// ---------------------------------------------------------------------------
// Session keys

test('defaultSessionKey outside allowedSessionKeyPrefixes is refused, naming both keys', () => {
  const problems = problemsOf(() => hooks({ defaultSessionKey: 'main', allowedSessionKeyPrefixes: ['hook:'] }));
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /hooks\.defaultSessionKey/);
  assert.match(problems[0]!, /hooks\.allowedSessionKeyPrefixes/);
  // Inside the prefixes (case-insensitively, prefixes trimmed): accepted.
  const snap = hooks({ defaultSessionKey: 'HOOK:inbox', allowedSessionKeyPrefixes: ['  Hook:  '] });
  assert.equal(snap.defaultSessionKey, 'HOOK:inbox');
  assert.deepEqual(snap.allowedSessionKeyPrefixes, ['hook:']);
  // Without prefixes anything goes.
  assert.equal(hooks({ defaultSessionKey: 'anything' }).allowedSessionKeyPrefixes, null);
});

// ---------------------------------------------------------------------------
// transformsDir

test('transformsDir defaults to <configDir>/hooks/transforms and may name a folder inside it', () => {
  assert.equal(hooks({}).transformsDir, TRANSFORMS_ROOT);
  assert.equal(hooks({ transformsDir: 'team-a' }).transformsDir, path.join(TRANSFORMS_ROOT, 'team-a'));
  assert.equal(hooks({ transformsDir: './a/b/../c' }).transformsDir, path.join(TRANSFORMS_ROOT, 'a', 'c'));
  assert.equal(
    hooks({ transformsDir: path.join(TRANSFORMS_ROOT, 'abs') }).transformsDir,
    path.join(TRANSFORMS_ROOT, 'abs'),
  );
  assert.equal(hooks({ transformsDir: '.' }).transformsDir, TRANSFORMS_ROOT);
  // A folder whose name merely starts with two dots is still inside.
  assert.equal(hooks({ transformsDir: '..shared' }).transformsDir, path.join(TRANSFORMS_ROOT, '..shared'));
});

test('transformsDir escaping the transforms root is refused, naming hooks.transformsDir', () => {
  for (const t of [
    '..',
    '../elsewhere',
    '../../..',
    'a/../../b',
    '/etc',
    CONFIG_DIR,
    `${TRANSFORMS_ROOT}-evil`,
    path.join(CONFIG_DIR, 'hooks'),
  ]) {
    const problems = problemsOf(() => hooks({ transformsDir: t }));
    assert.equal(problems.length, 1, t);
    assert.match(problems[0]!, /^hooks\.transformsDir /, t);
  }
});

// ---------------------------------------------------------------------------
// Defaults and the snapshot

test('defaults: body limit, auth rate limit, run limits', () => {
  const snap = hooks({});
  assert.equal(snap.maxBodyBytes, 262_144);
  assert.deepEqual(
    { ...snap.authRateLimit },
    { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60, rotationGraceSeconds: 300 },
  );
  assert.equal(snap.maxConcurrentRuns, 8);
  assert.equal(snap.maxQueuedRuns, 1000);
  assert.equal(snap.bodyTimeoutMs, 30_000);
  assert.equal(snap.allowRequestSessionKey, false);
  assert.equal(snap.allowedAgentIds, null);
  assert.equal(snap.defaultSessionKey, undefined);
  assert.equal(snap.trustedProxies, undefined);
});

test('explicit values override the defaults; a partial authRateLimit keeps the other defaults', () => {
  const snap = hooks({
    maxBodyBytes: 1024,
    bodyTimeoutSeconds: 2.5,
    authRateLimit: { maxFailures: 3 },
    maxConcurrentRuns: 2,
    maxQueuedRuns: 0,
    allowedAgentIds: [' ops ', 'main'],
  });
  assert.equal(snap.maxBodyBytes, 1024);
  assert.equal(snap.bodyTimeoutMs, 2500);
  assert.deepEqual(
    { ...snap.authRateLimit },
    { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60, rotationGraceSeconds: 300 },
  );
  assert.equal(snap.maxConcurrentRuns, 2);
  assert.equal(snap.maxQueuedRuns, 0);
  assert.deepEqual([...(snap.allowedAgentIds ?? [])].sort(), ['main', 'ops']);
  assert.equal(hooks({ allowedAgentIds: ['main', '*'] }).allowedAgentIds, null);
  assert.equal(hooks({ allowedAgentIds: [] }).allowedAgentIds?.size, 0);
});

test('the snapshot is frozen', () => {
  const snap = hooks({ allowedSessionKeyPrefixes: ['hook:'], authRateLimit: { maxFailures: 4 } });
  assert.ok(Object.isFrozen(snap));
  assert.ok(Object.isFrozen(snap.authRateLimit));
  assert.ok(Object.isFrozen(snap.allowedSessionKeyPrefixes));
  assert.ok(Object.isFrozen(snap.presets));
  assert.ok(Object.isFrozen(snap.mappingConfigs));
  // ES modules run in strict mode: writes throw instead of being ignored.
  assert.throws(() => {
    (snap as any).maxBodyBytes = 1;
  }, TypeError);
  assert.throws(() => {
    (snap.authRateLimit as any).maxFailures = 1000;
  }, TypeError);
  assert.throws(() => {
    (snap.allowedSessionKeyPrefixes as any).push('');
  }, TypeError);
  assert.equal(snap.maxBodyBytes, 262_144);
  assert.equal(snap.authRateLimit.maxFailures, 4);
  // The shared defaults were not touched by merging.
  assert.equal(hooks({}).authRateLimit.maxFailures, 20);
});

// ---------------------------------------------------------------------------
// gateway.trustedProxies

test('gateway.trustedProxies: valid IPs and CIDRs compile, a bad entry is named', () => {
  const snap = hooks({}, { gateway: { trustedProxies: ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8'] } });
  assert.ok(snap.trustedProxies);
  assert.equal(snap.trustedProxies.contains('10.20.30.40'), true);
  assert.equal(snap.trustedProxies.contains('::ffff:127.0.0.1') || snap.trustedProxies.contains('127.0.0.1'), true);
  assert.equal(snap.trustedProxies.contains('fd12::1'), true);
  assert.equal(snap.trustedProxies.contains('192.168.1.1'), false);

  for (const [list, index] of [
    [['127.0.0.1', 'not-an-ip'], 1],
    [['10.0.0.0/33'], 0],
    [['127.0.0.1', '::1', '::1/129'], 2],
    [['10.0.0.0/abc'], 0],
    [['300.1.1.1'], 0],
  ] as [string[], number][]) {
    const problems = problemsOf(() => hooks({}, { gateway: { trustedProxies: list } }));
    assert.ok(
      problems.some((p) => p.includes(`gateway.trustedProxies[${index}]`)),
      JSON.stringify(problems),
    );
    assert.ok(
      problems.some((p) => p.includes(JSON.stringify(list[index]))),
      'the bad value is quoted',
    );
  }
  for (const bad of ['127.0.0.1', [1], { a: 1 }]) {
    const problems = problemsOf(() => hooks({}, { gateway: { trustedProxies: bad } }));
    assert.ok(
      problems.some((p) => p.includes('gateway.trustedProxies')),
      JSON.stringify(problems),
    );
  }
});

test('cross-check problems are reported together', () => {
  const problems = problemsOf(() =>
    resolve({
      gateway: { trustedProxies: ['nope'] },
      hooks: {
        enabled: true,
        path: '/',
        defaultSessionKey: 'main',
        allowedSessionKeyPrefixes: ['hook:'],
        transformsDir: '../x',
      },
    }),
  );
  for (const key of [
    'hooks.path',
    'hooks.token',
    'hooks.defaultSessionKey',
    'gateway.trustedProxies[0]',
    'hooks.transformsDir',
  ]) {
    assert.ok(
      problems.some((p) => p.includes(key)),
      `${key} missing in ${JSON.stringify(problems)}`,
    );
  }
});

// ---------------------------------------------------------------------------
// readConfigFile

test('readConfigFile reads JSON5 (comments, trailing commas, unquoted keys)', async () => {
  const file = await tempFile(
    'ok.json5',
    `// the gateway config
{
  gateway: { auth: { token: 'gw' }, },
  hooks: {
    enabled: true,
    token: '${TOKEN}', /* dedicated */
    path: 'in/',
  },
}
`,
  );
  const value = await readConfigFile(file);
  const snap = resolveHooksConfig(selectStandaloneConfig(value), dir, file);
  assert.equal(snap.path, '/in');
  assert.equal(snap.enabled, true);
});

test('a JSON5 syntax error names the file, the line and the column', async () => {
  const file = await tempFile('broken.json5', '{\n  hooks: {\n    enabled: true,,\n  },\n}\n');
  await assert.rejects(readConfigFile(file), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.file, file);
    assert.ok(err.message.includes(file), err.message);
    assert.match(err.message, /line 3, column 19/);
    return true;
  });
  const truncated = await tempFile('truncated.json5', '{\n  hooks: {\n');
  await assert.rejects(readConfigFile(truncated), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.ok(err.message.includes(truncated));
    assert.match(err.message, /line 3, column 1/);
    return true;
  });
});

test('a file that is not one JSON5 object is refused', async () => {
  for (const [name, text] of [
    ['array.json5', '[1, 2]'],
    ['number.json5', '42'],
    ['null.json5', 'null'],
    ['string.json5', "'hooks'"],
  ]) {
    const file = await tempFile(name!, text!);
    await assert.rejects(readConfigFile(file), (err: unknown) => {
      assert.ok(err instanceof ConfigError, String(err));
      assert.ok(err.message.includes(file));
      assert.match(err.message, /object/);
      return true;
    });
  }
});

test('a missing file is a ConfigError naming it', async () => {
  const file = path.join(dir, 'does-not-exist.json5');
  await assert.rejects(readConfigFile(file), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.ok(err.message.includes(file));
    assert.match(err.message, /not found/);
    return true;
  });
});

test('the channel list is one list: the host contract and every schema use the same names in the same order', async () => {
  const { CHANNEL_ORDER } = await import('../../plugin/host.ts');
  const { default: channels } = await import('../../schema/channel.schema.json', { with: { type: 'json' } });
  assert.deepEqual(channels.definitions.name.enum, [...CHANNEL_ORDER]);
  assert.deepEqual(channels.definitions.target.enum, ['last', ...CHANNEL_ORDER]);
});
