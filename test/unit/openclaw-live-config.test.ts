// The OpenClaw host reads agents and channels from OpenClaw's live config, asking OpenClaw's runtime
// for it at most every quarter second: each call into the runtime enters the plugin's scope, which
// a wake must not pay for every request. A change is seen once that time has passed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { createOpenClawHost, type OpenClawHostOptions } from '../../plugin/hosts/openclaw/host.ts';

test("the host asks OpenClaw's runtime for its config at most every 250 ms, and sees a change after", async () => {
  let config: unknown = { agents: { list: [{ id: 'main', default: true }] } };
  let asked = 0;
  const api = {
    config,
    logger: { info() {}, warn() {}, error() {} },
    runtime: {
      config: { current: () => (asked++, config) },
      system: { enqueueSystemEvent: () => true, requestHeartbeat() {} },
      subagent: {},
    },
  };
  const host = createOpenClawHost({ api, configPath: '/nowhere/openclaw.json' } as unknown as OpenClawHostOptions);
  for (let i = 0; i < 1000; i++) assert.equal(host.agents.defaultId, 'main');
  assert.ok(asked <= 2, `asked ${asked} times for 1000 reads`);
  config = { agents: { list: [{ id: 'ops', default: true }] } };
  const deadline = Date.now() + 5000;
  while (host.agents.defaultId !== 'ops') {
    assert.ok(Date.now() < deadline, 'the new config was never seen');
    await delay(20);
  }
});
