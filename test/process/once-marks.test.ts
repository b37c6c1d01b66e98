// The crash windows of a digest and a coalesced batch on the real gateway process: killed (SIGKILL)
// right after the host accepted the digest's event or the batch's run and before the digest or batch
// was removed from its file, the next start recognizes the mark kept with the acceptance and hands
// neither over again. The process stops itself at that point through HOOKGATE_TEST_CRASH_AT (a
// test-only switch, plugin/util/test-crash-point.ts): no outside kill -9 can be timed to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import {
  eventually,
  GATEWAY_TOKEN,
  MAIN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';

const agentMapping = (id: string, extra: object) => ({
  id,
  match: { path: id },
  action: 'agent',
  deliver: false,
  wakeMode: 'next-heartbeat',
  model: 'fake/m',
  messageTemplate: '{{t}}',
  ...extra,
});

async function config(dir: string, baseUrl: string): Promise<void> {
  await writeConfig(dir, {
    hooks: {
      mappings: [
        agentMapping('noisy', { budget: { runs: 1, perSeconds: 2 } }),
        agentMapping('ci', { coalesce: { seconds: 1, maxItems: 10 } }),
        // Its first batch runs; the next is past the budget and digested (a window of 10 minutes).
        agentMapping('flaky-ci', { coalesce: { seconds: 1, maxItems: 10 }, budget: { runs: 1, perSeconds: 600 } }),
      ],
    },
    models: { providers: { fake: { baseUrl } } },
    agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
  });
}

/** A gateway that kills itself at `point` (the switch is read by the child only). */
async function crashingAt(dir: string, point: string): Promise<SpawnedGateway> {
  process.env.HOOKGATE_TEST_CRASH_AT = point;
  try {
    return await spawnGateway(dir);
  } finally {
    delete process.env.HOOKGATE_TEST_CRASH_AT;
  }
}

const died = (child: ChildProcess): Promise<NodeJS.Signals | null> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.signalCode)
    : new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal)));

async function gauge(gw: SpawnedGateway, name: string): Promise<number | undefined> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(await res.text());
  return m ? Number(m[1]) : undefined;
}

/** No run is queued or running. */
async function settledRuns(gw: SpawnedGateway): Promise<void> {
  await eventually(async () => {
    const values = await Promise.all(['hookgate_run_queue_depth', 'hookgate_runs_running'].map((n) => gauge(gw, n)));
    return values.every((v) => v === 0);
  }, 60_000);
}

/** Nothing waits in a batch or a digest and no run is queued or running: a start has done its work. */
async function settled(gw: SpawnedGateway): Promise<void> {
  await eventually(async () => {
    const names = [
      'hookgate_batched_requests_waiting',
      'hookgate_budget_digests_waiting',
      'hookgate_run_queue_depth',
      'hookgate_runs_running',
    ];
    const values = await Promise.all(names.map((n) => gauge(gw, n)));
    return values.every((v) => v === 0);
  }, 60_000);
}

async function digestEvents(gw: SpawnedGateway): Promise<string[]> {
  const { entries } = await gw.admin(`/api/sessions/${MAIN}/history?limit=1000`);
  return entries
    .filter((e: { kind: string; text: string }) => e.kind === 'system-event' && e.text.includes('over its budget'))
    .map((e: { text: string }) => e.text);
}

test('killed between the digest’s event and the digest’s removal: the restart does not post it again', async () => {
  const provider = await startFakeProvider();
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl);
  const first = await crashingAt(dir, 'digest-told');
  let second: SpawnedGateway | undefined;
  try {
    assert.equal(typeof (await first.hook('/hooks/noisy', { t: 'runs' })).body.runId, 'string');
    assert.equal((await first.hook('/hooks/noisy', { t: 'told once through the crash' })).body.digested, true);
    // At the window's end the digest's event is written, then the process kills itself.
    assert.equal(await died(first.child), 'SIGKILL', first.output());
    second = await spawnGateway(dir);
    await settled(second);
    const told = await digestEvents(second);
    assert.equal(told.length, 1, told.join('\n---\n'));
    assert.ok(told[0]!.includes('told once through the crash'));
  } finally {
    await second?.stop();
    await provider.close();
  }
});

test('killed between the batch’s run accepted and the batch’s removal: the restart does not run it again', async () => {
  const provider = await startFakeProvider();
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl);
  const first = await crashingAt(dir, 'batch-accepted');
  let second: SpawnedGateway | undefined;
  try {
    const a = await first.hook('/hooks/ci', { t: 'job one failed' });
    const b = await first.hook('/hooks/ci', { t: 'job two failed' });
    assert.equal(a.body.runId, b.body.runId);
    assert.equal(await died(first.child), 'SIGKILL', first.output());
    // The run was accepted: the dying process may have begun it, never more than once.
    const before = provider.requests.length;
    assert.ok(before <= 1);
    second = await spawnGateway(dir);
    await settled(second);
    assert.equal(provider.requests.length, before, 'the batch was not run again');
    const run = await second.admin(`/api/runs/${a.body.runId}`);
    // The standalone gateway reports a run the last process accepted and never finished as interrupted.
    assert.ok(['ok', 'error'].includes(run.status), JSON.stringify(run));
  } finally {
    await second?.stop();
    await provider.close();
  }
});

test('killed between a batch digested past its budget and the batch’s removal: the restart does not digest it again', async () => {
  const provider = await startFakeProvider();
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl);
  const first = await crashingAt(dir, 'batch-over-budget');
  let second: SpawnedGateway | undefined;
  try {
    const ran = await first.hook('/hooks/flaky-ci', { t: 'first batch runs' });
    await eventually(async () => {
      const run = await first.admin(`/api/runs/${ran.body.runId}`).catch(() => undefined);
      return run?.status === 'ok';
    }, 30_000);
    await first.hook('/hooks/flaky-ci', { t: 'job three failed' });
    await first.hook('/hooks/flaky-ci', { t: 'job four failed' });
    assert.equal(await died(first.child), 'SIGKILL', first.output());
    second = await spawnGateway(dir);
    await eventually(async () => (await gauge(second!, 'hookgate_batched_requests_waiting')) === 0, 60_000);
    await settledRuns(second);
    // The digest waits for its window: the batch's two texts in it, once.
    assert.equal(await gauge(second, 'hookgate_budget_digests_waiting'), 2);
    assert.equal(provider.requests.length, 1, 'only the first batch ran');
  } finally {
    await second?.stop();
    await provider.close();
  }
});
