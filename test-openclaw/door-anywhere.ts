// A door anywhere with OpenClaw as the assistant: a standalone gateway started as a door
// (`--role ingress`) queues what it accepts on a real redis-server, and the hookgate plugin inside a
// real OpenClaw (installed from the packed package, with hooks.queue) takes it: wakes in arrival
// order into OpenClaw's main session, each once; an agent run with the run id the door chose, run by
// OpenClaw's model; an action only the door allows kept as a failure the door lists; a pause set at
// the door honoured inside OpenClaw (held at the door in Redis, counted there, taken in by OpenClaw
// once resumed). Registered by run.ts; its
// gateway, model, Redis and door are its own.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  ensureInstalled,
  type GatewayFiles,
  type HooksBlock,
  type RunningGateway,
  startModelGateway,
  stopModelGateway,
} from './openclaw-env.ts';
import { streamReply, type FakeProvider } from '../test/helpers/fake-provider.ts';
import { startRedis, type RedisServer } from '../test/helpers/redis-server.ts';
import {
  GATEWAY_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../test/helpers/spawn-gateway.ts';

const nonce = Math.random().toString(36).slice(2, 8);
const DOOR_TOKEN = `hook-door-${nonce}-0123456789`;

let files: GatewayFiles;
let gw: RunningGateway;
let model: FakeProvider;
let redis: RedisServer;
let door: SpawnedGateway;

const queuedEvents = async (): Promise<string[]> =>
  ((await gw.call('status')).queuedSystemEvents as string[] | undefined) ?? [];

/** POST to the door's admin API with the standalone gateway's token. */
async function doorPost(path: string): Promise<number> {
  const res = await fetch(door.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_TOKEN}` },
    signal: AbortSignal.timeout(15_000),
  });
  return res.status;
}

async function admin(path: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${gw.url}/hookgate/api/${path}`, {
    headers: { authorization: `Bearer ${files.gatewayToken}` },
    signal: AbortSignal.timeout(15_000),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

describe('OpenClaw as the assistant of a door on Redis', { timeout: 10 * 60_000 }, () => {
  before(
    async () => {
      await ensureInstalled();
      redis = await startRedis();
      const queue = { redis: redis.url, name: `oc-door-${nonce}` };
      // The assistant checks what it takes against its own policies: the same as the door's.
      const policies = { allowedSessionKeyPrefixes: ['hook:'], allowRequestSessionKey: true };
      const hooks: HooksBlock = {
        enabled: true,
        token: `hook-assistant-${nonce}-0123456789`,
        path: '/hooks',
        queue,
        ...policies,
      };
      ({ files, gw, model } = await startModelGateway(hooks, (_req, res) => streamReply(res, `done ${nonce}`)));
      const dir = await tempStateDir();
      // The door allows one session prefix more than OpenClaw: what only the door allows is refused
      // inside OpenClaw and kept as a failure on Redis.
      await writeConfig(dir, {
        hooks: { token: DOOR_TOKEN, queue, ...policies, allowedSessionKeyPrefixes: ['hook:', 'wide:'] },
      });
      door = await spawnGateway(dir, ['--role', 'ingress']);
    },
    { timeout: 5 * 60_000 },
  );

  after(async () => {
    await door?.stop();
    await stopModelGateway({ files, gw, model });
    await redis?.stop();
  });

  test('wakes accepted by the door reach OpenClaw in arrival order, each once', async () => {
    const texts = Array.from({ length: 20 }, (_, i) => `door wake ${nonce} ${i}`);
    for (const text of texts) {
      const r = await door.hook('/hooks/wake', { text, mode: 'next-heartbeat' }, DOOR_TOKEN);
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const mine = (events: string[]) => events.filter((e) => e.includes(`door wake ${nonce} `));
    const seen = await gw.until('every wake in OpenClaw', 120_000, async () => {
      const events = mine(await queuedEvents());
      return events.length >= texts.length ? events : undefined;
    });
    assert.deepEqual(
      seen.map((e) => texts.find((t) => e.endsWith(t))),
      texts,
      'each once, in the order the door accepted them',
    );
  });

  test("an agent request at the door is run by OpenClaw's model under the run id the door chose", async () => {
    const asked = model.requests.length;
    const r = await door.hook(
      '/hooks/agent',
      {
        message: `door run ${nonce}`,
        name: 'door',
        sessionKey: 'hook:door',
        deliver: false,
        wakeMode: 'next-heartbeat',
      },
      DOOR_TOKEN,
    );
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const runId = (r.body as { runId: string }).runId;
    const run = await gw.until('the run ended in OpenClaw', 180_000, async () => {
      const found = await admin(`runs/${runId}`);
      return found.status === 200 && found.json.status === 'ok' ? found.json : undefined;
    });
    assert.equal(run.runId, runId);
    assert.equal(model.requests.length, asked + 1, 'one model call');
    assert.ok(
      JSON.stringify(model.requests.at(-1)).includes(`door run ${nonce}`),
      'the model was asked the message the door took',
    );
  });

  test("an action OpenClaw's own policies refuse is kept as a failure the door lists", async () => {
    const r = await door.hook(
      '/hooks/agent',
      { message: `refused inside ${nonce}`, sessionKey: 'wide:one', deliver: false },
      DOOR_TOKEN,
    );
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const runId = (r.body as { runId: string }).runId;
    const failure = await gw.until('the failure listed at the door', 120_000, async () => {
      const { failures } = await door.admin('/api/failures');
      return (failures as { runId: string }[]).find((f) => f.runId === runId);
    });
    assert.match((failure as unknown as { lastError: string }).lastError, /session_key_not_allowed/);
    // OpenClaw's admin API lists the same failure.
    const inside = await admin('failures');
    assert.ok((inside.json.failures as { runId: string }[]).some((f) => f.runId === runId));
  });

  test('a pause set at the door: the door holds in Redis, OpenClaw counts it, and takes it in once resumed', async () => {
    assert.equal(await doorPost('/api/hooks/wake/pause'), 200);
    await gw.until('the pause known inside OpenClaw', 60_000, async () => {
      const { json } = await admin('hooks');
      return json?.hooks?.find((h: { name: string }) => h.name === 'wake')?.paused ? true : undefined;
    });
    const text = `held at the door ${nonce}`;
    const r = await door.hook('/hooks/wake', { text, mode: 'next-heartbeat' }, DOOR_TOKEN);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.equal(r.body.held, true, JSON.stringify(r.body));
    // Held in Redis beside the queue: OpenClaw's admin API shows the same count as the door's.
    await gw.until('the held wake counted inside OpenClaw', 60_000, async () => {
      const { json } = await admin('hooks');
      return json?.hooks?.find((h: { name: string }) => h.name === 'wake')?.held >= 1 ? true : undefined;
    });
    assert.ok(!(await queuedEvents()).some((e) => e.includes(text)), 'not taken in while paused');
    assert.equal(await doorPost('/api/hooks/wake/resume'), 200);
    await gw.until('the held wake taken in after the resume', 60_000, async () =>
      (await queuedEvents()).some((e) => e.includes(text)) ? true : undefined,
    );
  });
});
