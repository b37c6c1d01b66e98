// Where the Gmail watcher posts, read from a loaded snapshot: the hooks path, the first hook token in
// force and the body limit of the mapping that owns its payload, by the rules the plugin applies to
// the request; a config that leaves it nowhere to post is refused naming the key.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, type HooksSnapshot } from '../../plugin/host-kit.ts';
import type { GatewayHost } from '../../plugin/host.ts';
import { DEFAULTS, loadConfig, PRESETS } from '../../plugin/kits/config.ts';
import { gmailHookTarget } from '../../gmail/hook-target.ts';

const TOKEN = 'hook-token-0123456789';
const PRESET_LIMIT = PRESETS.get('gmail')!.mapping.maxBodyBytes!;

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'hookgate-gmail-target-'));
});
after(() => rm(dir, { recursive: true, force: true }));

let files = 0;
async function snapshotOf(hooks: Record<string, unknown>): Promise<HooksSnapshot> {
  const configPath = path.join(dir, `config-${++files}.json5`);
  await writeFile(configPath, JSON.stringify({ hooks }));
  const unused = (): never => {
    throw new Error('not used');
  };
  const host: GatewayHost = {
    logger: { info() {}, warn() {}, error() {} },
    configPath,
    configDir: dir,
    agents: { list: [{ id: 'main', default: true }], defaultId: 'main' },
    channels: [],
    sessions: { mainSessionKey: unused, enqueueSystemEvent: unused, requestHeartbeat: unused, lastRoute: unused },
    runs: { runIsolatedTurn: unused },
    replies: { send: unused },
  };
  return (await loadConfig(host)).snapshot;
}

const target = async (hooks: Record<string, unknown>, baseUrl = 'http://127.0.0.1:18789') =>
  gmailHookTarget(await snapshotOf({ enabled: true, token: TOKEN, ...hooks }), baseUrl);

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems.join('\n');
  }
  assert.fail('no ConfigError');
}

test('the url is <base URL><hooks.path>/gmail, and the token the first hook token in force', async () => {
  const t = await target(
    { path: '/in/', token: [TOKEN, 'second-token-0123456789'], presets: ['gmail'] },
    'http://h:1/',
  );
  assert.equal(t.url, 'http://h:1/in/gmail');
  assert.equal(t.token, TOKEN);

  await writeFile(path.join(dir, 'hook.token'), 'file-token-0123456789\n');
  const fromFile = gmailHookTarget(
    await snapshotOf({ enabled: true, tokenFile: 'hook.token', presets: ['gmail'] }),
    'http://h:1',
  );
  assert.equal(fromFile.token, 'file-token-0123456789');
});

test('the body limit is that of the mapping that owns the watcher’s payload', async () => {
  assert.equal((await target({ presets: ['gmail'], maxBodyBytes: 5000 })).bodyLimit, PRESET_LIMIT, 'the preset’s');
  // A user mapping for the name wins over the preset, however its path is spelled.
  const mine = { match: { path: '/gmail/' }, action: 'wake', textTemplate: 'mail' };
  assert.equal((await target({ presets: ['gmail'], mappings: [{ ...mine, maxBodyBytes: 2048 }] })).bodyLimit, 2048);
  assert.equal((await target({ presets: ['gmail'], maxBodyBytes: 5000, mappings: [mine] })).bodyLimit, 5000);
  assert.equal((await target({ mappings: [mine] })).bodyLimit, DEFAULTS.maxBodyBytes);
  // One that matches another source does not own the watcher's posts (source "gmail"): the preset does.
  const other = { ...mine, match: { path: 'gmail', source: 'other' }, maxBodyBytes: 2048 };
  assert.equal((await target({ presets: ['gmail'], mappings: [other] })).bodyLimit, PRESET_LIMIT);
  // A mapping for any name owns it when nothing names it.
  const any = { action: 'wake', textTemplate: 'any', maxBodyBytes: 3000 };
  assert.equal((await target({ mappings: [any] })).bodyLimit, 3000);
});

test('a config that leaves the watcher nowhere to post is refused, naming the key', async () => {
  const unowned = await snapshotOf({ enabled: true, token: TOKEN });
  assert.match(
    refusal(() => gmailHookTarget(unowned, 'http://h')),
    /hooks\.presets must list "gmail" \(or a mapping must own \/hooks\/gmail\)/,
  );
  const disabled = await snapshotOf({ presets: ['gmail'] });
  const problems = refusal(() => gmailHookTarget(disabled, 'http://h'));
  assert.match(problems, /hooks\.enabled must be true/);
  assert.match(problems, /hooks\.token \(or hooks\.tokenFile\) is required/);
});
