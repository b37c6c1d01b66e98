// The agent tools of "After the 200" in OpenClaw: each asks the admin API with the call the HTTP API
// builds for the same request (so a tool and GET/POST /hookgate/api/... cannot disagree), a replay
// without confirm changes nothing, a model's bad arguments are refused with the key named, and an
// endpoint this hookgate lacks is one clear sentence.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { adminCallOf } from '../../plugin/admin/admin-http.ts';
import type { AdminCall } from '../../plugin/admin/admin-call.ts';
import { refuse } from '../../plugin/errors.ts';
import { adminTools, toolCall } from '../../plugin/hosts/openclaw/admin-tools.ts';
import type { AgentTool } from '../../plugin/hosts/openclaw/api.ts';
import type { RunningHookgate } from '../../plugin/hosts/openclaw/service.ts';

interface Seen {
  method: string;
  parts: readonly string[];
  query: string;
  body: unknown;
}

/** The tools over an admin function that records each call and answers `answer(call)`. */
function toolsOver(answer: (call: AdminCall) => unknown) {
  const seen: Seen[] = [];
  const running = {
    admin: async (call: AdminCall) => {
      seen.push({ method: call.method, parts: call.parts, query: call.query.toString(), body: await call.body() });
      return { status: 200, body: answer(call) };
    },
  } as unknown as RunningHookgate;
  const tools = new Map<string, AgentTool>(
    adminTools({ running: () => running, failure: () => undefined }).map((t) => [t.name, t]),
  );
  const run = async (name: string, params: unknown) => (await tools.get(name)!.execute('id', params)).details;
  return { seen, run };
}

/** The call the HTTP API builds for `<method> /hookgate/api/<rest>` with `body`. */
async function httpCall(method: string, rest: string, body?: unknown): Promise<Seen> {
  const req = Readable.from(
    body === undefined ? [] : [Buffer.from(JSON.stringify(body))],
  ) as unknown as IncomingMessage;
  Object.assign(req, { method, headers: {} });
  const call = adminCallOf(req, rest);
  return { method: call.method, parts: call.parts, query: call.query.toString(), body: await call.body() };
}

test('each tool makes the call the HTTP API makes for the same request', async () => {
  const { seen, run } = toolsOver(() => ({ ok: true }));
  await run('hookgate_failures', { limit: 5, all: true, hook: 'github' });
  await run('hookgate_pause', { hook: 'github' });
  await run('hookgate_resume', { hook: 'git hub/x' });
  await run('hookgate_replay', { runId: 'r-1', confirm: true });
  await run('hookgate_replay', { failureId: 'f-1', again: true, confirm: true });
  await run('hookgate_replay', { failed: true, since: '2026-11-25T06:00:00Z', hook: 'github', confirm: true });
  assert.deepEqual(seen, [
    await httpCall('GET', 'failures?limit=5&state=all&hook=github'),
    await httpCall('POST', 'hooks/github/pause'),
    await httpCall('POST', 'hooks/git%20hub%2Fx/resume'),
    await httpCall('POST', 'runs/r-1/replay'),
    await httpCall('POST', 'failures/f-1/replay?again=1'),
    await httpCall('POST', 'replay', { failed: true, since: '2026-11-25T06:00:00Z', hook: 'github' }),
  ]);
});

test('hookgate_replay without confirm reads what it would replay and replays nothing', async () => {
  const failures = [
    { id: 'f-old', hook: 'github', lastAt: '2026-11-25T05:00:00Z', state: 'open' },
    { id: 'f-new', hook: 'github', lastAt: '2026-11-25T07:00:00Z', state: 'open' },
    { id: 'f-other', hook: 'stripe', lastAt: '2026-11-25T07:00:00Z', state: 'open' },
  ];
  const { seen, run } = toolsOver((call) =>
    call.parts[0] === 'failures' ? { failures } : { runId: call.parts[1], status: 'error' },
  );
  const all = await run('hookgate_replay', { failed: true, since: '2026-11-25T06:00:00Z', hook: 'github' });
  assert.equal(all.replayed, false);
  assert.match(String(all.reason), /confirm: true/);
  assert.equal(all.wouldCall, 'POST /hookgate/api/replay');
  assert.deepEqual(all.failureIds, ['f-new']);
  const one = await run('hookgate_replay', { runId: 'r-9' });
  assert.deepEqual(one.run, { runId: 'r-9', status: 'error' });
  assert.equal(one.wouldCall, 'POST /hookgate/api/runs/r-9/replay');
  const failure = await run('hookgate_replay', { failureId: 'f-old', confirm: false });
  assert.deepEqual(failure.failure, failures[0]);
  assert.ok(
    seen.every((c) => c.method === 'GET'),
    JSON.stringify(seen),
  );
});

test("a model's bad arguments are refused naming the key, before any call", async () => {
  const { seen, run } = toolsOver(() => ({}));
  await assert.rejects(run('hookgate_replay', { confirm: true }), /exactly one of runId, failureId or failed/);
  await assert.rejects(run('hookgate_replay', { runId: 'a', failureId: 'b' }), /exactly one/);
  await assert.rejects(run('hookgate_replay', { failed: true, confirm: true }), /needs since/);
  await assert.rejects(run('hookgate_replay', { failed: true, since: 'yesterday' }), /since must be an ISO 8601/);
  await assert.rejects(run('hookgate_replay', { runId: 'a', confirm: 'yes' }), /confirm must be true or false/);
  await assert.rejects(run('hookgate_pause', {}), /hook is required/);
  await assert.rejects(run('hookgate_pause', { hook: 7 }), /hook must be/);
  await assert.rejects(run('hookgate_failures', { limit: 0 }), /limit must be a whole number/);
  assert.deepEqual(seen, []);
});

test('an endpoint this hookgate lacks, or a refusal, comes back as one sentence naming the call', async () => {
  const missing = toolsOver(() => {
    throw refuse.notFound('no such admin endpoint');
  });
  await assert.rejects(
    missing.run('hookgate_pause', { hook: 'github' }),
    /^Error: hookgate_pause: this hookgate has no POST \/hookgate\/api\/hooks\/github\/pause/,
  );
  const refused = toolsOver(() => {
    throw refuse.modelNotAllowed('model x is not allowed');
  });
  await assert.rejects(
    refused.run('hookgate_replay', { runId: 'r', confirm: true }),
    /hookgate_replay: model x is not allowed \(model_not_allowed\)/,
  );
});

test('the tools say the plugin is not running instead of calling it', async () => {
  const tools = adminTools({ running: () => undefined, failure: () => 'bad config' });
  const failures = tools.find((t) => t.name === 'hookgate_failures')!;
  await assert.rejects(failures.execute('id', {}), /hookgate failed to start: bad config/);
  assert.equal(toolCall('GET', ['failures']).query.toString(), '');
});
