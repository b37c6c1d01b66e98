// docs/guide/model-providers.md kept true: each json5 block of the guide, merged into a minimal
// config as the guide says to, passes the standalone gateway's config loader (schema and checks), and
// every model it names belongs to a provider it defines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import JSON5 from 'json5';
import { resolveGatewaySettings } from '../../plugin/hosts/standalone/server/settings.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const GUIDE = 'docs/guide/model-providers.md';

function blocks(): string[] {
  const text = readFileSync(path.join(ROOT, GUIDE), 'utf8');
  return [...text.matchAll(/^```json5\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

test('every json5 block of the model-providers guide is a config the gateway loads', () => {
  const found = blocks();
  assert.equal(found.length, 3, 'OpenAI, Ollama and any OpenAI-compatible server');
  for (const block of found) {
    const part = JSON5.parse(block) as {
      agents: { defaults: { model: string; models?: string[] } };
      models: { providers: Record<string, { baseUrl: string }> };
    };
    const file = {
      gateway: { auth: { token: 'doc-gateway-token-0123456789' } },
      hooks: { enabled: true, token: 'doc-hook-token-0123456789' },
      ...part,
    };
    const settings = resolveGatewaySettings(file, path.join(ROOT, 'gateway.json5'));
    const named = [settings.defaultModel, ...(settings.models ?? [])];
    for (const model of named) {
      const provider = model.slice(0, model.indexOf('/'));
      assert.ok(Object.hasOwn(settings.providers, provider), `${model}: no provider "${provider}" in\n${block}`);
    }
  }
});
