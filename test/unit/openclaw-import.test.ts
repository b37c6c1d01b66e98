// `hookgate openclaw import`: OpenClaw's top-level hooks block moved into plugins.entries.hookgate.config,
// the built-in hooks turned off, comments and other keys kept; refusals change nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import JSON5 from 'json5';
import { applyImport } from '../../plugin/hosts/standalone/cli/commands/openclaw-import.ts';
import { runCli } from '../helpers/gmail-run.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const OPENCLAW_CONFIG = `// OpenClaw, as its user wrote it
{
  gateway: { mode: 'local', auth: { mode: 'token', token: 'gateway-token-0123456789' } }, // keep me
  hooks: {
    enabled: true,
    token: 'built-in-hook-token-0123456789',
    path: '/hooks',
    allowedAgentIds: ['main'],
    /* the transforms */
    transformsDir: 'mine',
    mappings: [
      { id: 'legacy', match: { path: 'legacy' }, textTemplate: 'x', messageTemplate: 'Event {{payload.kind}}', sessionMode: 'isolated' },
      { match: { source: 'ci' }, action: 'wake', textTemplate: 'CI {{status}}' }, // from the CI server
      { id: 'batch', action: 'wake', forEach: 'items', textTemplate: 'Item {{items[0].n}} of {{ payload.items[0].of }}', transform: { module: 'batch.js' } },
    ],
    gmail: { account: 'me@example.com', topic: 'projects/my-project/topics/gmail-watch', pushToken: 'secret', hookUrl: 'http://127.0.0.1:18789/hooks/gmail', maxBytes: 20000 },
    internal: { enabled: true },
  },
  plugins: {
    allow: ['anthropic'], // the user's own list
    entries: { hookgate: { enabled: true } },
  },
}
`;
const FILE = '/srv/openclaw/openclaw.json';

test('the hooks block moves to plugins.entries.hookgate.config; comments, other keys and hooks.internal stay', () => {
  const { text, changes } = applyImport(OPENCLAW_CONFIG, FILE);
  for (const comment of ['// OpenClaw, as its user wrote it', '// keep me', "// the user's own list"])
    assert.ok(text.includes(comment), comment);
  // The block's own comments move with it, into the plugin's config.
  const moved = text.slice(text.indexOf('hookgate: {'));
  assert.ok(moved.includes('/* the transforms */') && moved.includes('// from the CI server'), text);
  const file = JSON5.parse<Record<string, any>>(text);
  assert.deepEqual(file.hooks, { enabled: false, internal: { enabled: true } });
  assert.deepEqual(file.gateway, { mode: 'local', auth: { mode: 'token', token: 'gateway-token-0123456789' } });
  assert.deepEqual(file.plugins.allow, ['anthropic', 'hookgate']);
  assert.equal(file.plugins.entries.hookgate.enabled, true);
  assert.deepEqual(file.plugins.entries.hookgate.config, {
    enabled: true,
    token: 'built-in-hook-token-0123456789',
    path: '/hooks',
    allowedAgentIds: ['main'],
    transformsDir: 'mine',
    mappings: [
      {
        id: 'legacy',
        match: { path: 'legacy' },
        textTemplate: 'x',
        messageTemplate: 'Event {{payload.kind}}',
        action: 'agent',
      },
      { match: { source: 'ci' }, action: 'wake', textTemplate: 'CI {{status}}' },
      {
        id: 'batch',
        action: 'wake',
        forEach: 'items',
        textTemplate: 'Item {{item.n}} of {{ item.of }}',
        transform: { module: 'batch.js' },
        maxItems: 200,
      },
    ],
    gmail: { account: 'me@example.com', topic: 'gmail-watch', project: 'my-project', maxBytes: 20000 },
  });
  const said = changes.join('\n');
  assert.match(
    said,
    /moved hooks\.token, hooks\.path, hooks\.allowedAgentIds, hooks\.transformsDir, hooks\.mappings, hooks\.gmail to plugins\.entries\.hookgate\.config/,
  );
  assert.match(said, /set hooks\.enabled: false .*hooks\.internal kept/);
  assert.match(said, /added "hookgate" to plugins\.allow/);
  assert.match(
    said,
    /hooks\.mappings\[2\] \(id "batch"\)\.textTemplate: \{\{items\[0\]…\}\} rewritten as \{\{item…\}\}/,
  );
  assert.match(said, /\(id "batch"\): with forEach, the transform gets the item as ctx\.item/);
  assert.match(said, /hooks\.gmail\.pushToken, hooks\.gmail\.hookUrl not carried over/);
  assert.ok(!said.includes('secret') && !said.includes('built-in-hook-token'), 'no secrets in what it prints');
  // Run again on its own output: nothing left to import.
  assert.throws(() => applyImport(text, FILE), /no webhook settings to import/);
});

test('refusals name the key and change nothing: no hooks block, a plugin config already set, persistent sessions, unknown keys, bad values', () => {
  assert.throws(() => applyImport('{ gateway: {} }', FILE), /no top-level hooks block/);
  assert.throws(
    () =>
      applyImport(
        `{ hooks: { token: 'a-token-0123456789' }, plugins: { entries: { hookgate: { config: { token: 'b' } } } } }`,
        FILE,
      ),
    /plugins\.entries\.hookgate\.config is already set/,
  );
  assert.throws(
    () =>
      applyImport(
        `{ hooks: { enabled: true, token: 'a-token-0123456789', mappings: [{ id: 'p', messageTemplate: 'x', sessionMode: 'persistent' }] } }`,
        FILE,
      ),
    /hooks\.mappings\[0\] \(id "p"\)\.sessionMode "persistent"/,
  );
  assert.throws(
    () => applyImport(`{ hooks: { token: 'a-token-0123456789', surprise: 1 } }`, FILE),
    /hooks\.surprise is not a key hookgate knows/,
  );
  // What the plugin would refuse at start is refused here, under the key it would have in OpenClaw.
  assert.throws(
    () => applyImport(`{ hooks: { enabled: true, token: 'a-token-0123456789', path: '/' } }`, FILE),
    /plugins\.entries\.hookgate\.config\.path/,
  );
  assert.throws(() => applyImport(`{ hooks: { enabled: true } , }`, FILE), /no webhook settings/);
});

test('hookgate openclaw import --openclaw-config: rewrites the file in place (mode kept) and prints what changed', async () => {
  const dir = await tempDir('hookgate-oc-import-');
  const file = path.join(dir, 'openclaw.json');
  await mkdir(path.join(dir, 'hooks', 'transforms', 'mine'), { recursive: true });
  await writeFile(file, OPENCLAW_CONFIG, { mode: 0o640 });
  const { code, out } = await runCli(['openclaw', 'import', '--openclaw-config', file]);
  assert.equal(code, 0, out);
  assert.match(out, /moved hooks\.token/);
  assert.match(out, /Restart OpenClaw/);
  const text = await readFile(file, 'utf8');
  assert.ok(text.includes('// keep me'));
  assert.equal(JSON5.parse<Record<string, any>>(text).hooks.enabled, false);
  assert.equal((await stat(file)).mode & 0o777, 0o640);

  const again = await runCli(['openclaw', 'import', '--openclaw-config', file]);
  assert.equal(again.code, 1);
  assert.match(again.out, /no webhook settings to import/);
  assert.equal(await readFile(file, 'utf8'), text, 'a refusal writes nothing');
});

test('a strict JSON openclaw.json stays strict JSON (jq reads it), its layout kept', () => {
  const original = {
    gateway: { mode: 'local', auth: { mode: 'token', token: 'gateway-token-0123456789' } },
    hooks: {
      enabled: true,
      token: 'built-in-hook-token-0123456789',
      path: '/hooks',
      mappings: [{ id: 'ci', match: { path: 'ci' }, action: 'wake', textTemplate: 'CI {{status}}' }],
    },
    plugins: { allow: ['anthropic'], entries: { telegram: { enabled: true } } },
    agents: { defaults: { model: 'anthropic/claude-sonnet-4-5' } },
  };
  for (const indent of [2, 4, '\t']) {
    const json = `${JSON.stringify(original, null, indent)}\n`;
    const { text } = applyImport(json, FILE);
    const file = JSON.parse(text) as Record<string, any>;
    assert.deepEqual(file, JSON5.parse(applyImport(json.replace(/"(\w+)":/g, '$1:'), FILE).text));
    assert.deepEqual(file.hooks, { enabled: false });
    assert.deepEqual(file.plugins.entries.hookgate.config.mappings, original.hooks.mappings);
    assert.deepEqual(file.plugins.allow, ['anthropic', 'hookgate']);
    // What the import did not touch is as it was, line for line.
    const untouched = JSON.stringify({ agents: original.agents }, null, indent).split('\n').slice(1, -1).join('\n');
    assert.ok(text.includes(untouched), text);
  }
});

test('a JSON5 openclaw.json is still edited as JSON5 (its comments kept)', () => {
  const { text } = applyImport(OPENCLAW_CONFIG, FILE);
  assert.throws(() => JSON.parse(text));
  assert.ok(text.includes('// keep me'));
});
