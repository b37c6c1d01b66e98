// Each routing policy of an agent run (agent, session key, model, channel, timeout), through the real
// HTTP server on loopback: the request's answer and what reached the host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CHANNEL_ORDER, type ChannelName } from '../../plugin/host.ts';
import { post, type TestGateway, withGateway } from '../helpers/recording-host.ts';
import { assertError } from '../helpers/common.ts';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** POSTs an agent payload that must be accepted; resolves once its run finished, with its turn and summary. */
async function runAgent(gw: TestGateway, body: Record<string, unknown>) {
  const r = await post(gw.url, '/hooks/agent', body);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const runId: string = r.body.runId;
  const final = await gw.finalRun(runId);
  const turn = gw.rec.turns.find((t) => t.runId === runId);
  assert.ok(turn, `run ${runId} never reached the host`);
  const summary = gw.rec.events.find((e) => e.meta.runId === runId);
  assert.ok(summary, `run ${runId} posted no summary`);
  const deliveries = gw.rec.deliveries.filter((d) => d.runId === runId);
  return { runId, turn, summary, final, deliveries };
}

// ---------------------------------------------------------------------------
// hooks.allowedAgentIds

test('allowedAgentIds omitted: any explicit agentId is routed to that agent', async () => {
  await withGateway({ agents: [{ id: 'main', default: true }, { id: 'ops' }, { id: 'sales' }] }, async (gw) => {
    for (const id of ['ops', 'sales', 'main']) {
      const { turn, summary, final } = await runAgent(gw, { message: `for ${id}`, agentId: id });
      assert.equal(turn.agentId, id);
      assert.equal(final.agentId, id);
      assert.equal(summary.sessionKey, `agent:${id}:main`);
      assert.match(turn.sessionKey, new RegExp(`^agent:${id}:hook:${UUID}$`));
    }
  });
});

test('allowedAgentIds containing "*": any explicit agentId is allowed', async () => {
  await withGateway({ hooks: { allowedAgentIds: ['main', '*'] } }, async (gw) => {
    const { turn } = await runAgent(gw, { message: 'x', agentId: 'ops' });
    assert.equal(turn.agentId, 'ops');
  });
});

test('allowedAgentIds []: every explicit agentId is refused, no agentId uses the default agent', async () => {
  await withGateway({ hooks: { allowedAgentIds: [] } }, async (gw) => {
    for (const agentId of ['ops', 'main', 'unknown-agent']) {
      assertError(
        await post(gw.url, '/hooks/agent', { message: 'x', agentId }),
        400,
        'agent_not_allowed',
        /allowedAgentIds/,
      );
    }
    assert.equal(gw.rec.turns.length, 0);
    assert.equal(gw.rec.runUpdates.length, 0);
    const { turn, summary } = await runAgent(gw, { message: 'no agent given' });
    assert.equal(turn.agentId, 'main');
    assert.equal(summary.sessionKey, 'agent:main:main');
  });
});

test('allowedAgentIds list: listed agents pass, unlisted ones get 400 agent_not_allowed', async () => {
  await withGateway(
    {
      agents: [{ id: 'main', default: true }, { id: 'ops' }, { id: 'sales' }],
      hooks: { allowedAgentIds: ['ops', 'main'] },
    },
    async (gw) => {
      const r = await post(gw.url, '/hooks/agent', { message: 'x', agentId: 'sales' });
      assertError(r, 400, 'agent_not_allowed', /"sales"/);
      assert.equal(gw.rec.turns.length, 0);
      assert.equal((await runAgent(gw, { message: 'x', agentId: 'ops' })).turn.agentId, 'ops');
      assert.equal((await runAgent(gw, { message: 'x', agentId: 'main' })).turn.agentId, 'main');
    },
  );
});

test('unknown agentId falls back to the default agent', async () => {
  await withGateway({}, async (gw) => {
    const { turn, summary, final } = await runAgent(gw, { message: 'x', agentId: 'no-such-agent' });
    assert.equal(turn.agentId, 'main');
    assert.equal(final.agentId, 'main');
    assert.equal(summary.sessionKey, 'agent:main:main');
    assert.match(turn.sessionKey, /^agent:main:hook:/);
  });
});

test('the allowlist is checked on the resolved agent, not on the requested id', async () => {
  // Unknown id resolves to "main": allowed when main is listed even though the requested id is not.
  await withGateway({ hooks: { allowedAgentIds: ['main'] } }, async (gw) => {
    const { turn } = await runAgent(gw, { message: 'x', agentId: 'ghost' });
    assert.equal(turn.agentId, 'main');
  });
  // Unknown id resolves to "main": refused when only ops is listed, and the message names main.
  await withGateway({ hooks: { allowedAgentIds: ['ops'] } }, async (gw) => {
    assertError(
      await post(gw.url, '/hooks/agent', { message: 'x', agentId: 'ghost' }),
      400,
      'agent_not_allowed',
      /"main"/,
    );
    assert.equal(gw.rec.turns.length, 0);
  });
});

// ---------------------------------------------------------------------------
// Session key

test('request sessionKey while allowRequestSessionKey is false: 400 session_key_disabled', async () => {
  await withGateway({ hooks: { defaultSessionKey: 'hook:default' } }, async (gw) => {
    assertError(
      await post(gw.url, '/hooks/agent', { message: 'x', sessionKey: 'hook:mine' }),
      400,
      'session_key_disabled',
    );
    assertError(
      await post(gw.url, '/hooks/agent', { message: 'x', sessionKey: 'hook:default' }),
      400,
      'session_key_disabled',
      /allowRequestSessionKey/,
    );
    assert.equal(gw.rec.turns.length, 0);
  });
});

test('allowRequestSessionKey true without prefixes: the request key is used', async () => {
  await withGateway({ hooks: { allowRequestSessionKey: true, defaultSessionKey: 'hook:default' } }, async (gw) => {
    const { turn, final } = await runAgent(gw, { message: 'x', sessionKey: 'anything:goes' });
    assert.equal(turn.sessionKey, 'agent:main:anything:goes');
    assert.equal(final.sessionKey, 'agent:main:anything:goes');
    const ops = await runAgent(gw, { message: 'x', sessionKey: 'thread-7', agentId: 'ops' });
    assert.equal(ops.turn.sessionKey, 'agent:ops:thread-7');
  });
});

test('allowRequestSessionKey true with prefixes: a miss is 400 session_key_not_allowed', async () => {
  await withGateway(
    { hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'ci:'] } },
    async (gw) => {
      for (const sessionKey of ['other:1', 'hoo', 'xhook:1', ' hook:1']) {
        assertError(
          await post(gw.url, '/hooks/agent', { message: 'x', sessionKey }),
          400,
          'session_key_not_allowed',
          /allowedSessionKeyPrefixes/,
        );
      }
      assert.equal(gw.rec.turns.length, 0);
      assert.equal(
        (await runAgent(gw, { message: 'x', sessionKey: 'ci:build-9' })).turn.sessionKey,
        'agent:main:ci:build-9',
      );
    },
  );
});

test('prefix match is case-insensitive and configured prefixes are trimmed', async () => {
  await withGateway(
    { hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['  HOOK:  ', 'Team-'] } },
    async (gw) => {
      assert.equal((await runAgent(gw, { message: 'x', sessionKey: 'hook:a' })).turn.sessionKey, 'agent:main:hook:a');
      // The key itself keeps its case.
      assert.equal((await runAgent(gw, { message: 'x', sessionKey: 'Hook:B' })).turn.sessionKey, 'agent:main:Hook:B');
      assert.equal(
        (await runAgent(gw, { message: 'x', sessionKey: 'TEAM-red' })).turn.sessionKey,
        'agent:main:TEAM-red',
      );
      assertError(
        await post(gw.url, '/hooks/agent', { message: 'x', sessionKey: 'team:red' }),
        400,
        'session_key_not_allowed',
      );
    },
  );
});

test('no request key: hooks.defaultSessionKey is used', async () => {
  await withGateway({ hooks: { defaultSessionKey: 'hook:inbox' } }, async (gw) => {
    const a = await runAgent(gw, { message: 'one' });
    const b = await runAgent(gw, { message: 'two', agentId: 'ops' });
    assert.equal(a.turn.sessionKey, 'agent:main:hook:inbox');
    assert.equal(b.turn.sessionKey, 'agent:ops:hook:inbox');
  });
  // Also when request keys are allowed but none is sent.
  await withGateway({ hooks: { defaultSessionKey: 'hook:inbox', allowRequestSessionKey: true } }, async (gw) => {
    assert.equal((await runAgent(gw, { message: 'x' })).turn.sessionKey, 'agent:main:hook:inbox');
  });
});

test('no key at all: a fresh hook:<uuid> per run', async () => {
  await withGateway({}, async (gw) => {
    const a = await runAgent(gw, { message: 'one' });
    const b = await runAgent(gw, { message: 'two' });
    const re = new RegExp(`^agent:main:hook:${UUID}$`);
    assert.match(a.turn.sessionKey, re);
    assert.match(b.turn.sessionKey, re);
    assert.notEqual(a.turn.sessionKey, b.turn.sessionKey);
  });
});

// ---------------------------------------------------------------------------
// Model

test('no model allowlist: any model is passed to the turn', async () => {
  await withGateway({}, async (gw) => {
    assert.equal((await runAgent(gw, { message: 'x', model: 'openai/gpt-x' })).turn.model, 'openai/gpt-x');
    assert.equal((await runAgent(gw, { message: 'x', model: 'some-alias' })).turn.model, 'some-alias');
    assert.equal((await runAgent(gw, { message: 'x' })).turn.model, undefined);
  });
});

test('model allowlist: allowed models pass, others get 400 model_not_allowed', async () => {
  await withGateway({ models: ['echo/echo', 'openai/gpt-small'] }, async (gw) => {
    assert.equal((await runAgent(gw, { message: 'x', model: 'openai/gpt-small' })).turn.model, 'openai/gpt-small');
    assertError(
      await post(gw.url, '/hooks/agent', { message: 'x', model: 'openai/gpt-big' }),
      400,
      'model_not_allowed',
      /openai\/gpt-big/,
    );
    assertError(await post(gw.url, '/hooks/agent', { message: 'x', model: 'ECHO/ECHO' }), 400, 'model_not_allowed');
    assert.equal(gw.rec.turns.length, 1);
    // No model requested: nothing to check.
    assert.equal((await runAgent(gw, { message: 'x' })).turn.model, undefined);
  });
});

// ---------------------------------------------------------------------------
// Channel

test('every channel of the spec is accepted and delivered on that channel', async () => {
  await withGateway(
    { channels: [...CHANNEL_ORDER], turn: async () => ({ status: 'ok', reply: 'the reply' }) },
    async (gw) => {
      const names: ('last' | ChannelName)[] = ['last', ...CHANNEL_ORDER];
      assert.equal(names.length, 9);
      for (const channel of names) {
        const { deliveries, final } = await runAgent(gw, { message: 'x', channel, to: `to-${channel}` });
        assert.equal(final.status, 'ok');
        assert.equal(deliveries.length, 1, channel);
        // `last` without a last route: the first available channel in the spec's order.
        assert.equal(deliveries[0]!.channel, channel === 'last' ? 'whatsapp' : channel);
        assert.equal(deliveries[0]!.to, `to-${channel}`);
        assert.equal(deliveries[0]!.text, 'the reply');
      }
    },
  );
});

test('a channel the host does not have: 400 invalid_payload naming it when deliver is true, accepted when false', async () => {
  await withGateway({ channels: ['telegram', 'slack'] }, async (gw) => {
    for (const channel of ['discord', 'whatsapp', 'msteams']) {
      const r = await post(gw.url, '/hooks/agent', { message: 'x', channel });
      assertError(r, 400, 'invalid_payload', new RegExp(`"${channel}"`));
      assertError(await post(gw.url, '/hooks/agent', { message: 'x', channel, deliver: true }), 400, 'invalid_payload');
    }
    assert.equal(gw.rec.turns.length, 0);
    const { deliveries, final } = await runAgent(gw, { message: 'x', channel: 'discord', deliver: false });
    assert.equal(final.status, 'ok');
    assert.equal(deliveries.length, 0);
  });
});

test('an unknown channel name: 400 invalid_payload, whatever deliver is', async () => {
  await withGateway({ channels: [...CHANNEL_ORDER] }, async (gw) => {
    for (const channel of ['irc', 'WhatsApp', '', 'email']) {
      assertError(
        await post(gw.url, '/hooks/agent', { message: 'x', channel }),
        400,
        'invalid_payload',
        /channel must be one of/,
      );
      assertError(
        await post(gw.url, '/hooks/agent', { message: 'x', channel, deliver: false }),
        400,
        'invalid_payload',
      );
    }
    assert.equal(gw.rec.turns.length, 0);
  });
});

// ---------------------------------------------------------------------------
// timeoutSeconds

test('timeoutSeconds: 600 s by default', async () => {
  await withGateway({}, async (gw) => {
    assert.equal((await runAgent(gw, { message: 'x' })).turn.timeoutMs, 600_000);
  });
});

test("timeoutSeconds: the host's agents.timeoutSeconds when set, an explicit value over both", async () => {
  await withGateway({ timeoutSeconds: 42 }, async (gw) => {
    assert.equal((await runAgent(gw, { message: 'x' })).turn.timeoutMs, 42_000);
    assert.equal((await runAgent(gw, { message: 'x', timeoutSeconds: 7 })).turn.timeoutMs, 7_000);
    assert.equal((await runAgent(gw, { message: 'x', timeoutSeconds: 1.5 })).turn.timeoutMs, 1_500);
    assert.equal((await runAgent(gw, { message: 'x', timeoutSeconds: 3600 })).turn.timeoutMs, 3_600_000);
  });
  await withGateway({}, async (gw) => {
    assert.equal((await runAgent(gw, { message: 'x', timeoutSeconds: 90 })).turn.timeoutMs, 90_000);
  });
});
