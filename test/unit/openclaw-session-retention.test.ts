// In OpenClaw a run's one-off hook session is deleted through the runtime's subagent.deleteSession,
// its transcript with it (hooks.sessionRetention); an OpenClaw without it keeps every session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenClawHost, type OpenClawHostOptions } from '../../plugin/hosts/openclaw/host.ts';

function hostWith(subagent: Record<string, unknown>) {
  const api = {
    config: {},
    logger: { info() {}, warn() {}, error() {} },
    runtime: { system: { enqueueSystemEvent: () => true, requestHeartbeat() {} }, subagent },
  };
  return createOpenClawHost({ api, configPath: '/nowhere/openclaw.json' } as unknown as OpenClawHostOptions);
}

test("the OpenClaw host deletes a session, transcript included, through the runtime's subagent.deleteSession", async () => {
  const asked: unknown[] = [];
  const host = hostWith({ deleteSession: async (params: unknown) => void asked.push(params) });
  assert.ok(host.sessions.deleteSession, 'offered when OpenClaw has it');
  await host.sessions.deleteSession('agent:main:hook:0f0e');
  assert.deepEqual(asked, [{ sessionKey: 'agent:main:hook:0f0e', deleteTranscript: true }]);
});

test('an OpenClaw runtime without subagent.deleteSession: the host offers no deletion (sessions are kept)', () => {
  assert.equal(hostWith({}).sessions.deleteSession, undefined);
});
