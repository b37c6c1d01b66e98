// Replay over HTTP on the real gateway, with a model provider on loopback that refuses (400, not
// retried) until the test lets it answer: a failure and a run replayed as new runs with the stored
// prompt, twice is the first replay again unless ?again=1, bulk replay since a time and by hook,
// today's policies checked again after a reload, and a payload field no template renders never
// reaching the state dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.ts';
import {
  eventually,
  GATEWAY_TOKEN,
  ROOT,
  SOURCE_CLI,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { assertError } from '../helpers/common.ts';
import { filesUnder } from '../helpers/temp-dir.ts';

const CANARY = 'CANARY-7f3e9a1c-never-rendered';

async function post(url: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url + p, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_TOKEN}` },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

/** A provider that refuses with a 400 while `refusing` is set, else answers. */
async function switchableProvider(): Promise<FakeProvider & { state: { refusing: boolean } }> {
  const state = { refusing: true };
  const provider = await startFakeProvider((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (state.refusing) {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: { message: 'refused for now' } }));
    } else res.end(JSON.stringify({ choices: [{ message: { content: `done: ${req.body.model}` } }] }));
  });
  return Object.assign(provider, { state });
}

function config(
  provider: FakeProvider,
  extra: { hooks?: object; models?: string[]; mapping?: boolean } = {},
): Record<string, unknown> {
  return {
    models: { providers: { fake: { baseUrl: provider.baseUrl } } },
    agents: {
      defaults: { models: extra.models ?? ['fake/m1', 'fake/m2'] },
      list: [{ id: 'main', default: true }, { id: 'ops' }],
    },
    hooks: {
      mappings:
        extra.mapping === false
          ? []
          : [
              {
                id: 'ci',
                match: { path: 'ci' },
                action: 'agent',
                name: 'CI',
                agentId: 'ops',
                model: 'fake/m1',
                deliver: false,
                messageTemplate: 'Build {{build}} failed',
              },
            ],
      ...extra.hooks,
    },
  };
}

async function failureOf(gw: SpawnedGateway, runId: string): Promise<any> {
  return eventually(async () => {
    const page = await gw.admin('/api/failures?state=all&limit=1000');
    return page.failures.find((f: any) => f.runId === runId);
  });
}

async function finalRun(gw: SpawnedGateway, runId: string): Promise<any> {
  return eventually(async () => {
    const r = await gw.admin(`/api/runs/${runId}`).catch(() => undefined);
    return r && r.status !== 'queued' && r.status !== 'running' && r;
  });
}

/** Rewrites the config and waits for the gateway to say it reloaded it. */
async function reloaded(gw: SpawnedGateway, rewrite: () => Promise<unknown>): Promise<void> {
  const count = (): number => gw.output().split('config reloaded').length;
  const before = count();
  await rewrite();
  await eventually(async () => count() > before).catch((err) => {
    console.log(gw.output().slice(-3000));
    throw err;
  });
}

test('a failure and a run replay as new runs with the stored prompt, once unless again, and the payload never reaches the state dir', async () => {
  const provider = await switchableProvider();
  const dir = await tempStateDir();
  await writeConfig(dir, config(provider));
  const gw = await spawnGateway(dir);
  try {
    const sent = await gw.hook('/hooks/ci', { build: 'B1', canary: CANARY });
    assert.equal(sent.status, 202);
    const failure = await failureOf(gw, sent.body.runId);
    assert.equal(failure.hook, 'CI');
    assert.equal(failure.agentId, 'ops');
    const firstPrompt = provider.requests[0]!.body.messages.at(-1).content as string;
    assert.match(firstPrompt, /Build B1 failed/);

    provider.state.refusing = false;
    const replay = await post(gw.url, `/api/failures/${failure.id}/replay`);
    assert.equal(replay.status, 202);
    assert.equal(replay.body.ok, true);
    assert.equal(replay.body.replayOf, sent.body.runId);
    assert.notEqual(replay.body.runId, sent.body.runId);
    assert.equal(replay.body.duplicate, undefined);
    const run = await finalRun(gw, replay.body.runId);
    assert.equal(run.status, 'ok', JSON.stringify(run));
    assert.equal(run.agentId, 'ops');
    assert.equal(run.reply, 'done: m1');
    assert.equal(provider.requests[1]!.body.messages.at(-1).content, firstPrompt, 'the prompt as rendered and wrapped');
    const replayed = await failureOf(gw, sent.body.runId);
    assert.equal(replayed.state, 'replayed');
    assert.equal(replayed.replayedBy, replay.body.runId);

    const twice = await post(gw.url, `/api/failures/${failure.id}/replay`);
    assert.equal(twice.status, 202);
    assert.deepEqual(twice.body, { ...replay.body, duplicate: true });
    const byRun = await post(gw.url, `/api/runs/${sent.body.runId}/replay`);
    assert.deepEqual(byRun.body, { ...replay.body, duplicate: true }, 'the failed run is the same failure');
    const again = await post(gw.url, `/api/failures/${failure.id}/replay?again=1`);
    assert.equal(again.status, 202);
    assert.notEqual(again.body.runId, replay.body.runId);
    assert.equal(again.body.duplicate, undefined);
    assert.equal((await finalRun(gw, again.body.runId)).status, 'ok');
    assert.equal((await failureOf(gw, sent.body.runId)).replayedBy, again.body.runId);

    // A run that ended well replays from its kept action.
    const ofRun = await post(gw.url, `/api/runs/${replay.body.runId}/replay`);
    assert.equal(ofRun.status, 202);
    assert.equal(ofRun.body.replayOf, replay.body.runId);
    assert.equal((await finalRun(gw, ofRun.body.runId)).reply, 'done: m1');
    assert.deepEqual((await post(gw.url, `/api/runs/${replay.body.runId}/replay`)).body, {
      ...ofRun.body,
      duplicate: true,
    });

    // Two replays of one failure asked at once start one run.
    provider.state.refusing = true;
    const second = await gw.hook('/hooks/ci', { build: 'B2', canary: CANARY });
    const secondFailure = await failureOf(gw, second.body.runId);
    provider.state.refusing = false;
    const [a, b] = await Promise.all([
      post(gw.url, `/api/failures/${secondFailure.id}/replay`),
      post(gw.url, `/api/failures/${secondFailure.id}/replay`),
    ]);
    assert.equal(a.body.runId, b.body.runId);
    assert.deepEqual([a.body.duplicate, b.body.duplicate].filter(Boolean), [true]);
    await finalRun(gw, a.body.runId);

    assertError(await post(gw.url, '/api/failures/fail_0000000000000000/replay'), 404, 'not_found');
    assertError(await post(gw.url, '/api/runs/no-such-run/replay'), 404, 'not_found');
    assertError(await post(gw.url, `/api/failures/${failure.id}/replay?again=maybe`), 400, 'bad_request', /again/);
    const get = await fetch(`${gw.url}/api/failures/${failure.id}/replay`, {
      headers: { authorization: `Bearer ${GATEWAY_TOKEN}` },
    });
    assert.equal(get.status, 405);

    const metrics = await (
      await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } })
    ).text();
    assert.match(metrics, /^hookgate_replays_total\{kind="run"\} 4$/m);

    const leaks: string[] = [];
    for (const file of await filesUnder(dir)) if ((await readFile(file, 'utf8')).includes(CANARY)) leaks.push(file);
    assert.deepEqual(leaks, [], 'no file under the state dir holds the unrendered payload field');
    assert.ok((await filesUnder(dir)).some((f) => f.endsWith(path.join('after', 'failures.jsonl'))));
  } finally {
    await gw.stop();
    await provider.close();
  }
});

test('bulk replay since a time and by hook; a policy changed since refuses the replay with its usual code', async () => {
  const provider = await switchableProvider();
  const dir = await tempStateDir();
  await writeConfig(dir, config(provider, { mapping: false }));
  const gw = await spawnGateway(dir);
  const agent = (name: string) => gw.hook('/hooks/agent', { message: `from ${name}`, name, model: 'fake/m2' });
  try {
    const old = [await agent('Alpha'), await agent('Alpha')];
    for (const r of old) await failureOf(gw, r.body.runId);
    const since = new Date().toISOString();
    const fresh = [await agent('Alpha'), await agent('Beta'), await agent('Beta')];
    for (const r of fresh) await failureOf(gw, r.body.runId);
    provider.state.refusing = false;

    for (const [body, field] of [
      [{ failed: false }, 'failed'],
      [{ since }, 'failed'],
      [{ failed: true, since: 'yesterday' }, 'since'],
      [{ failed: true, since: '2026-11-25' }, 'since'],
      [{ failed: true, hook: '' }, 'hook'],
      [{ failed: true, hook: 7 }, 'hook'],
      [{ failed: true, extra: 1 }, 'extra'],
      [[1], 'object'],
    ] as const) {
      assertError(await post(gw.url, '/api/replay', body), 400, 'bad_request', new RegExp(field));
    }
    assertError(await post(gw.url, '/api/replay', '{not json'), 400, 'bad_request', /JSON/);

    const beta = await post(gw.url, '/api/replay', { failed: true, since, hook: 'Beta' });
    assert.equal(beta.status, 200);
    assert.equal(beta.body.ok, true);
    assert.equal(beta.body.replayed, 2);
    assert.equal(beta.body.runIds.length, 2);
    for (const id of beta.body.runIds) assert.equal((await finalRun(gw, id)).status, 'ok');
    const betaFailures = await Promise.all(fresh.slice(1).map((r) => failureOf(gw, r.body.runId)));
    assert.deepEqual(betaFailures.map((f) => f.replayedBy).sort(), [...beta.body.runIds].sort());

    const rest = await post(gw.url, '/api/replay', { failed: true, since });
    assert.equal(rest.body.replayed, 1);
    assert.equal((await failureOf(gw, fresh[0]!.body.runId)).replayedBy, rest.body.runIds[0]);
    assert.equal((await failureOf(gw, old[0]!.body.runId)).state, 'open', 'failed before `since`');

    // Today's policies: the run's agent is no longer allowed, then its model.
    provider.state.refusing = true;
    const ci = await gw.hook('/hooks/agent', { message: 'ops work', name: 'Ops', agentId: 'ops', model: 'fake/m1' });
    const ciFailure = await failureOf(gw, ci.body.runId);
    await reloaded(gw, () =>
      writeConfig(dir, config(provider, { mapping: false, hooks: { allowedAgentIds: ['main'] } })),
    );
    assertError(await post(gw.url, `/api/failures/${ciFailure.id}/replay`), 400, 'agent_not_allowed');
    assertError(await post(gw.url, `/api/runs/${ci.body.runId}/replay`), 400, 'agent_not_allowed');
    const refused = await post(gw.url, '/api/replay', { failed: true });
    assertError(refused, 400, 'agent_not_allowed', new RegExp(ciFailure.id));
    assert.equal((await failureOf(gw, old[0]!.body.runId)).state, 'open', 'a refused bulk replay replays nothing');

    await reloaded(gw, () => writeConfig(dir, config(provider, { mapping: false, models: ['fake/m2'] })));
    assertError(await post(gw.url, `/api/failures/${ciFailure.id}/replay`), 400, 'model_not_allowed');
    assert.equal((await failureOf(gw, ci.body.runId)).state, 'open');

    // The refused one dismissed, the rest replays.
    provider.state.refusing = false;
    assert.equal((await post(gw.url, `/api/failures/${ciFailure.id}/dismiss`)).status, 200);
    const before = (await gw.admin('/api/failures?limit=1000')).failures.length;
    const all = await post(gw.url, '/api/replay', { failed: true });
    assert.equal(all.body.replayed, before);
    assert.equal((await post(gw.url, '/api/replay', { failed: true })).body.replayed, 0);
  } finally {
    await gw.stop();
    await provider.close();
  }
});

function cli(gw: SpawnedGateway, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...SOURCE_CLI, ...args, '--config', gw.configPath, '--url', gw.url],
      { cwd: ROOT },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

test('hookgate failures and hookgate replay call the admin API', async () => {
  const provider = await switchableProvider();
  const dir = await tempStateDir();
  await writeConfig(dir, config(provider, { mapping: false }));
  const gw = await spawnGateway(dir);
  const agent = (name: string) => gw.hook('/hooks/agent', { message: `from ${name}`, name, model: 'fake/m2' });
  const rows = (out: string) => out.trimEnd().split('\n').slice(1);
  try {
    const alpha = await agent('Alpha');
    const beta = await agent('Beta');
    const betaFailure = await failureOf(gw, beta.body.runId);
    await failureOf(gw, alpha.body.runId);
    provider.state.refusing = false;

    const listed = await cli(gw, ['failures']);
    assert.equal(listed.code, 0, listed.out);
    assert.match(listed.out.split('\n')[0]!, /^ID\s+KIND\s+HOOK\s+RUN\s+TRIES\s+LAST TRIED\s+STATE\s+REASON$/);
    assert.equal(rows(listed.out).length, 2, listed.out);
    const onlyBeta = rows((await cli(gw, ['failures', '--hook', 'Beta'])).out);
    assert.equal(onlyBeta.length, 1);
    assert.match(
      onlyBeta[0]!,
      new RegExp(`^${betaFailure.id}\\s+run\\s+Beta\\s+${beta.body.runId}\\s+1\\s.*open.*refused for now`),
    );

    const replayed = await cli(gw, ['replay', betaFailure.id]);
    assert.equal(replayed.code, 0, replayed.out);
    const newRun = /Replayed as run (\S+)\./.exec(replayed.out)?.[1];
    assert.ok(newRun, replayed.out);
    assert.equal((await finalRun(gw, newRun)).status, 'ok');
    const twice = await cli(gw, ['replay', beta.body.runId]);
    assert.match(twice.out, new RegExp(`Already replayed as run ${newRun} `));
    assert.equal(rows((await cli(gw, ['failures'])).out).length, 1);
    const all = rows((await cli(gw, ['failures', '--all'])).out);
    assert.equal(all.length, 2);
    assert.ok(all.some((r) => r.includes(`replayed → ${newRun}`)));

    const bulk = await cli(gw, ['replay', '--failed', '--since', '1h', '--hook', 'Alpha']);
    assert.match(bulk.out, /^Replayed 1: \S+\n$/);
    assert.equal((await cli(gw, ['replay', '--failed'])).out, 'Nothing to replay.\n');
    assert.equal((await cli(gw, ['failures'])).out, 'No open failures.\n');

    for (const bad of [['replay'], ['replay', '--failed', '--since', 'yesterday'], ['replay', 'x', '--hook', 'A']]) {
      assert.equal((await cli(gw, bad)).code, 2, bad.join(' '));
    }
    const unknown = await cli(gw, ['replay', 'fail_0000000000000000']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.out, /404 not_found/);
  } finally {
    await gw.stop();
    await provider.close();
  }
});
