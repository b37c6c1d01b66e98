// The OpenClaw manifest's configSchema is what OpenClaw checks the plugin's settings against before
// the plugin sees them: it is schema/hooks-config.schema.json with its refs inlined, key for key, so
// OpenClaw and the plugin judge a config alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { hookgateTools, registerTools, TOOL_NAMES } from '../../plugin/hosts/openclaw/tools.ts';
import type { RunningHookgate } from '../../plugin/hosts/openclaw/service.ts';
import { RequestLog } from '../../plugin/request-log/request-log.ts';
import { recentRequests, type RequestsQuery } from '../../plugin/admin/status-view.ts';
import { manifestConfigSchema } from '../helpers/manifest-schema.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (file: string): any => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const manifest = read('openclaw.plugin.json');

test("the manifest's configSchema is the hooks config schema with its refs inlined", () => {
  assert.deepEqual(
    manifest.configSchema,
    manifestConfigSchema(),
    'openclaw.plugin.json is out of step with schema/: run npx tsx test/helpers/manifest-schema.ts',
  );
});

test('a config using dedupe, sharedState and gmail passes the manifest; an unknown key does not', () => {
  const validate = new Ajv({ strict: false }).compile(manifest.configSchema);
  const config = {
    enabled: true,
    token: 'manifest-test-token-0123456789',
    dedupe: { windowSeconds: 3600, maxKeys: 5000 },
    sharedState: { redis: 'redis://127.0.0.1:6379' },
    gmail: { account: 'a@example.com' },
  };
  assert.equal(validate(config), true, JSON.stringify(validate.errors));
  assert.equal(validate({ ...config, dedupeWindow: 1 }), false);
});

test('the manifest declares exactly the agent tools the plugin registers (OpenClaw refuses undeclared ones)', () => {
  const registered: string[] = [];
  registerTools({ registerTool: (tool: { name: string }) => registered.push(tool.name) } as never, {
    running: () => undefined,
    failure: () => undefined,
  });
  assert.deepEqual(registered, [...TOOL_NAMES]);
  assert.deepEqual(manifest.contracts.tools, [...TOOL_NAMES]);
});

test('hookgate_recent checks what the model sends, and answers from the request log', async () => {
  const log = await RequestLog.open(undefined, console, () => ({ maxEntries: 100, retainMs: 3_650 * 86_400_000 }));
  const at = Date.parse('2026-11-25T07:00:00Z');
  log.add({
    atMs: at,
    requestId: 'a',
    client: '127.0.0.1',
    path: '/hooks/github',
    hook: 'github',
    mapping: 'github',
    status: 202,
    ms: 1,
    bytes: 10,
  });
  log.add({
    atMs: at + 1,
    requestId: 'b',
    client: '127.0.0.1',
    path: '/hooks/wake',
    hook: 'wake',
    status: 401,
    code: 'unauthorized',
    ms: 1,
    bytes: 5,
  });
  const running = {
    recent: (q: RequestsQuery) => recentRequests(log, q),
  } as unknown as RunningHookgate;
  const recent = hookgateTools({ running: () => running, failure: () => undefined }).find(
    (t) => t.name === 'hookgate_recent',
  )!;
  const r = await recent.execute('call-1', { hook: 'github', since: '2026-11-25T06:00:00Z' });
  assert.deepEqual(
    (r.details.requests as { requestId: string }[]).map((q) => q.requestId),
    ['a'],
  );
  const refused = await recent.execute('call-5', { outcome: '4xx', code: 'unauthorized', client: '127.0.0.1' });
  assert.deepEqual(
    (refused.details.requests as { requestId: string }[]).map((q) => q.requestId),
    ['b'],
  );
  const before = await recent.execute('call-6', { until: '2026-11-25T07:00:00.001Z' });
  assert.deepEqual(
    (before.details.requests as { requestId: string }[]).map((q) => q.requestId),
    ['a'],
  );
  await assert.rejects(recent.execute('call-7', { outcome: '3xx' }), /outcome must be one of 2xx/);
  await assert.rejects(recent.execute('call-2', { since: 'this morning' }), /since must be an ISO 8601 time/);
  await assert.rejects(recent.execute('call-3', { limit: 'ten' }), /limit must be a whole number/);
  const starting = hookgateTools({ running: () => undefined, failure: () => undefined })[0]!;
  assert.deepEqual((await starting.execute('call-4', {})).details, { running: false, reason: 'hookgate is starting' });
});
