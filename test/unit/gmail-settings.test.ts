// hooks.gmail: the schema's checks and the checks between keys each name the key; defaults filled in.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolveHooksConfig, selectStandaloneConfig } from '../../plugin/kits/config.ts';
import { resolveGmailSettings } from '../../gmail/gmail-settings.ts';

const hooks = (gmail: unknown) => ({ enabled: true, token: 'hook-token-0123456789', presets: ['gmail'], gmail });
const problems = (gmail: unknown): string => {
  try {
    resolveHooksConfig(selectStandaloneConfig({ hooks: hooks(gmail) }), '/tmp');
    resolveGmailSettings(hooks(gmail));
  } catch (err) {
    return (err as Error).message;
  }
  return '';
};

test('hooks.gmail: wrong values are refused naming the key', () => {
  assert.match(problems({ account: 'me@example.com', mode: 'both', project: 'proj-test' }), /hooks\.gmail\.mode/);
  assert.match(problems({ account: '../etc', project: 'proj-test' }), /hooks\.gmail\.account/);
  assert.match(problems({ account: 'me@example.com', project: 'proj-test', maxBytes: 0 }), /hooks\.gmail\.maxBytes/);
  assert.match(
    problems({ account: 'me@example.com', project: 'proj-test', renewEveryMinutes: 0 }),
    /hooks\.gmail\.renewEveryMinutes/,
  );
  assert.match(
    problems({ account: 'me@example.com', project: 'proj-test', unknownKey: 1 }),
    /hooks\.gmail.*unknownKey/,
  );
  assert.match(
    problems({ account: 'me@example.com', project: 'proj-test', serve: { port: 70000 } }),
    /hooks\.gmail\.serve\.port/,
  );
  assert.match(problems({ account: 'me@example.com' }), /hooks\.gmail\.project is required/);
  assert.match(
    problems({ account: 'me@example.com', project: 'proj-test', mode: 'push' }),
    /hooks\.gmail\.pushEndpoint is required/,
  );
  assert.match(
    problems({ account: 'me@example.com', project: 'proj-test', mode: 'push', pushEndpoint: 'http://plain.example' }),
    /hooks\.gmail\.pushEndpoint/,
  );
});

test('hooks.gmail: defaults, and no watcher without an account', () => {
  assert.equal(resolveGmailSettings(hooks({})), undefined);
  assert.equal(resolveGmailSettings({}), undefined);
  const s = resolveGmailSettings(hooks({ account: 'me@example.com', project: 'proj-test' }))!;
  assert.deepEqual(
    { ...s },
    {
      account: 'me@example.com',
      project: 'proj-test',
      topic: 'gmail-watch',
      subscription: 'gmail-watch-sub',
      mode: 'pull',
      label: 'INBOX',
      pushEndpoint: undefined,
      pushServiceAccount: undefined,
      serve: { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' },
      includeBody: true,
      maxBytes: 20000,
      renewEveryMs: 720 * 60_000,
      resyncMessages: 20,
    },
  );
});
