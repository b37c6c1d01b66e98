// The credentials the OpenClaw host hands the core to mask: every string under a key that names a
// secret in OpenClaw's config (its channels, model providers, gateway), "${VAR}" read from the
// environment; settings under such keys that are no credential (short words) are left out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openClawSecrets } from '../../plugin/hosts/openclaw/config.ts';

test("OpenClaw's credentials are found wherever its config keeps them", () => {
  const config = {
    gateway: { auth: { mode: 'token', token: 'gateway-token-0123456789' } },
    channels: {
      telegram: { botToken: '123456:telegram-bot-token-abcdef', dmPolicy: 'pairing' },
      slack: { accounts: [{ appToken: 'xapp-1-slack-app-token', botToken: '${SLACK_BOT_TOKEN}' }] },
    },
    models: { providers: { openai: { apiKey: 'sk-openai-key-0123456789', baseUrl: 'https://api.openai.com/v1' } } },
    plugins: { entries: { hookgate: { config: { token: 'hook-token-0123456789', tokenMode: 'disabled' } } } },
    tools: { maxTokens: 4096, passwordStrength: 'strong words with spaces' },
  };
  const found = openClawSecrets(config, { SLACK_BOT_TOKEN: 'xoxb-from-the-environment' });
  assert.deepEqual(found.sort(), [
    '123456:telegram-bot-token-abcdef',
    'gateway-token-0123456789',
    'hook-token-0123456789',
    'sk-openai-key-0123456789',
    'xapp-1-slack-app-token',
    'xoxb-from-the-environment',
  ]);
});

test('a config too deep or of another shape gives what it can, and never throws', () => {
  let deep: Record<string, unknown> = { token: 'deepest-token-0123456789' };
  for (let i = 0; i < 50; i++) deep = { next: deep };
  assert.deepEqual(openClawSecrets(deep), []);
  assert.deepEqual(openClawSecrets(undefined), []);
  assert.deepEqual(openClawSecrets('token'), []);
});
