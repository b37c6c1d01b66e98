// Unit tests of the JSON5 edit `webhooks gmail setup` makes: the contracted keys in, comments and other
// keys kept, a second run byte for byte the same, odd shapes refused with the key named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import JSON5 from 'json5';
import { ConfigError } from '../../plugin/errors.ts';
import { defaultConfigText } from '../../plugin/hosts/standalone/server/settings.ts';
import { applyGmailSetup, type GmailSetupKeys } from '../../plugin/hosts/standalone/cli/support/gmail-config-edit.ts';

const PULL: GmailSetupKeys = {
  account: 'me@example.com',
  project: 'my-project',
  topic: 'gmail-watch',
  subscription: 'gmail-watch-sub',
  mode: 'pull',
  label: 'INBOX',
};

const FILE = `// my gateway
{
  gateway: { port: 18789, auth: { token: "gw" } }, // trailing remark
  hooks: {
    enabled: false,
    /* block comment */
    token: 'hook',
    presets: ["github",],
    gmail: { account: "old@example.com", maxBytes: 5000, model: "openai/gpt" },
  },
  extra: [1, 2, 3,],
}
`;

test('writes the contracted keys, keeps comments, other keys and the user’s tunables', () => {
  const out = applyGmailSetup(FILE, PULL, 'x.json5');
  for (const kept of [
    '// my gateway',
    '// trailing remark',
    '/* block comment */',
    "token: 'hook'",
    'extra: [1, 2, 3,]',
  ])
    assert.ok(out.includes(kept), `kept: ${kept}`);
  const parsed = JSON5.parse<{ hooks: Record<string, unknown> }>(out);
  assert.equal(parsed.hooks.enabled, true);
  assert.deepEqual(parsed.hooks.presets, ['github', 'gmail']);
  assert.deepEqual(parsed.hooks.gmail, {
    account: 'me@example.com',
    project: 'my-project',
    topic: 'gmail-watch',
    subscription: 'gmail-watch-sub',
    mode: 'pull',
    label: 'INBOX',
    maxBytes: 5000,
    model: 'openai/gpt',
    includeBody: true,
    renewEveryMinutes: 720,
    resyncMessages: 20,
  });
  assert.equal(applyGmailSetup(out, PULL, 'x.json5'), out, 'a second run changes nothing');
});

test('a file without hooks gains the block; push mode adds the endpoint and serve, pull removes the endpoint', () => {
  const push = applyGmailSetup(
    '{\n  gateway: { port: 1 },\n}\n',
    {
      ...PULL,
      mode: 'push',
      pushEndpoint: 'https://hooks.example.com/gmail-pubsub',
      pushServiceAccount: 'push@my-project.iam.gserviceaccount.com',
    },
    'x.json5',
  );
  const parsed = JSON5.parse<{ hooks: { gmail: Record<string, unknown>; presets: string[]; enabled: boolean } }>(push);
  assert.equal(parsed.hooks.enabled, true);
  assert.deepEqual(parsed.hooks.presets, ['gmail']);
  assert.equal(parsed.hooks.gmail.pushEndpoint, 'https://hooks.example.com/gmail-pubsub');
  assert.equal(parsed.hooks.gmail.pushServiceAccount, 'push@my-project.iam.gserviceaccount.com');
  assert.deepEqual(parsed.hooks.gmail.serve, { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' });
  const pull = JSON5.parse<{ hooks: { gmail: Record<string, unknown> } }>(applyGmailSetup(push, PULL, 'x.json5'));
  assert.equal(pull.hooks.gmail.mode, 'pull');
  assert.equal(pull.hooks.gmail.pushEndpoint, undefined);
  assert.equal(pull.hooks.gmail.pushServiceAccount, undefined);
  assert.deepEqual(pull.hooks.gmail.serve, { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' });
});

test('the default config and a compact one-line file are edited and read back as intended', () => {
  const defaults = defaultConfigText();
  const out = applyGmailSetup(defaults, PULL, 'x.json5');
  assert.ok(out.startsWith(defaults.slice(0, defaults.indexOf('enabled: true'))), 'the text before hooks is untouched');
  assert.ok(out.includes('list: [{ id: "main", default: true }]'));
  assert.equal(JSON5.parse<{ hooks: { gmail: { account: string } } }>(out).hooks.gmail.account, PULL.account);
  const compact = '{"hooks":{"gmail":{"pushEndpoint":"https://x.example/p","serve":{"port":1}},"presets":["github"]}}';
  const edited = applyGmailSetup(compact, PULL, 'x.json5');
  const hooks = JSON5.parse<{ hooks: Record<string, any> }>(edited).hooks;
  assert.deepEqual(hooks.presets, ['github', 'gmail']);
  assert.equal(hooks.gmail.pushEndpoint, undefined);
  assert.deepEqual(hooks.gmail.serve, { port: 1 });
  assert.equal(applyGmailSetup(edited, PULL, 'x.json5'), edited);
});

test('odd shapes are refused naming the key, not overwritten', () => {
  for (const [text, key] of [
    ['{ hooks: [] }', 'hooks must be an object'],
    ['{ hooks: { presets: "gmail" } }', 'hooks.presets must be a list'],
    ['{ hooks: { gmail: true } }', 'hooks.gmail must be an object'],
    ['[1]', 'must hold one JSON5 object'],
    ['{ hooks: ', 'not valid JSON5'],
  ] as const) {
    assert.throws(
      () => applyGmailSetup(text, PULL, 'x.json5'),
      (err) => err instanceof ConfigError && err.message.includes(key),
      text,
    );
  }
});
