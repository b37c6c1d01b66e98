// Retry schedules outlive the gateway process: kill -9 while a run waits for its next try, then a
// restart runs it once; kill -9 during a retry's try ends the run as interrupted, never tried again
// (the model may have acted on it). A retry due at start that finishes before the channels open
// waits for them to deliver its reply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.ts';
import { eventually, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

async function summaries(gw: SpawnedGateway, runId: string): Promise<string[]> {
  const page = await gw.admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/history?limit=1000`);
  // Every event of the run: its one summary (a failed run's names its failure, left out here).
  return (page.entries as { runId?: string; text: string }[])
    .filter((e) => e.runId === runId)
    .map((e) => e.text.replace(/ \(failure fail_[0-9a-f]{16}(, after \d+ attempts)?\)$/, ''));
}

function retrying(gw: SpawnedGateway, runId: string): Promise<any> {
  return eventually(async () => {
    const run = await gw.admin(`/api/runs/${runId}`);
    return run.status === 'retrying' && run;
  });
}

function finalRun(gw: SpawnedGateway, runId: string): Promise<any> {
  return eventually(async () => {
    const run = await gw.admin(`/api/runs/${runId}`);
    return ['ok', 'error', 'timeout'].includes(run.status) && run;
  });
}

async function config(dir: string, baseUrl: string): Promise<void> {
  await writeConfig(dir, {
    // A short backoff; a cap above the provider's Retry-After (2 s), which is honoured up to it.
    hooks: { retry: { attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 5 } },
    models: { providers: { fake: { baseUrl } } },
    agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
  });
}

function unavailable(res: ServerResponse, retryAfterSeconds: number): void {
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(retryAfterSeconds) });
  res.end('{"error":{"message":"overloaded"}}');
}

interface WaitingRetry {
  dir: string;
  provider: FakeProvider;
  /** The gateway that accepted the run, which now waits for its next try. */
  first: SpawnedGateway;
  runId: string;
  /** GET /api/runs/<runId> while retrying. */
  waiting: any;
  /** The provider answers "made it" from now on. */
  comeBack(): void;
  /** Gateways started later on the same state dir: stopped at the end. */
  later: SpawnedGateway[];
}

/** An agent run named `name` whose first try got a 503 (Retry-After: 2): it waits for its next try. */
async function withWaitingRetry(name: string, body: (w: WaitingRetry) => Promise<void>): Promise<void> {
  let up = false;
  const provider = await startFakeProvider((_req, res) => {
    if (!up) return unavailable(res, 2);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ choices: [{ message: { content: 'made it' } }] }));
  });
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl);
  const first = await spawnGateway(dir);
  const later: SpawnedGateway[] = [];
  try {
    const r = await first.hook('/hooks/agent', { message: 'x', model: 'fake/m', name });
    assert.equal(r.status, 202);
    const waiting = await retrying(first, r.body.runId);
    await body({ dir, provider, first, runId: r.body.runId, waiting, comeBack: () => (up = true), later });
  } finally {
    await first.stop();
    for (const gw of later) await gw.stop();
    await provider.close();
  }
}

/** A run waits for its next try; the gateway is stopped with `signal`, the provider comes back, a restart runs it once. */
function waitingRetrySurvives(title: string, signal: NodeJS.Signals): void {
  test(title, () =>
    withWaitingRetry('Survivor', async ({ dir, provider, first, runId, waiting, comeBack, later }) => {
      await first.stop(signal);
      comeBack();
      const second = await spawnGateway(dir);
      later.push(second);
      const run = await finalRun(second, runId);
      assert.equal(run.status, 'ok');
      assert.equal(run.reply, 'made it');
      assert.equal(provider.requests.length, 2, 'the first try and one retry');
      assert.equal(run.attempts.length, 2);
      // The due time set before the stop held: the retry did not start before it.
      assert.ok(Date.parse(run.attempts[1].at) >= Date.parse(waiting.nextAttemptAt), JSON.stringify(run));
      assert.deepEqual(await summaries(second, runId), ['Hook Survivor: made it']);
    }),
  );
}

waitingRetrySurvives(
  'kill -9 while a run waits for its next try: after the restart it runs once, with one summary',
  'SIGKILL',
);
waitingRetrySurvives('a clean stop keeps a waiting retry on disk: the next start runs it once', 'SIGTERM');

/** Whether the retry's reply is in the run's session log on disk (written just before it is delivered). */
async function replyWritten(dir: string, runId: string, reply: string): Promise<boolean> {
  const sessions = path.join(dir, 'data', 'sessions');
  for (const name of await readdir(sessions)) {
    // Only whole lines: the gateway may be writing the last one.
    const lines = (await readFile(path.join(sessions, name), 'utf8')).split('\n').slice(0, -1);
    const entries = lines.map((l) => JSON.parse(l) as { kind?: string; text?: string; runId?: string });
    if (entries.some((e) => e.kind === 'reply' && e.text === reply && e.runId === runId)) return true;
  }
  return false;
}

test('a retry due at start: its reply is delivered once (the reply queue opens before retries resume)', () =>
  withWaitingRetry('Early', async ({ dir, first, runId, comeBack, later }) => {
    await first.stop('SIGKILL');
    comeBack();
    later.push(await spawnGateway(dir));
    await eventually(() => replyWritten(dir, runId, 'made it'));
    const second = later[0]!;
    const run = await finalRun(second, runId);
    assert.equal(run.status, 'ok', JSON.stringify(run));
    assert.equal(run.reply, 'made it');
    const outbox = (await second.admin('/api/outbox?limit=1000')).deliveries as { runId: string; text: string }[];
    assert.deepEqual(
      outbox.filter((d) => d.runId === runId).map((d) => d.text),
      ['made it'],
    );
    assert.deepEqual(await summaries(second, runId), ['Hook Early: made it']);
  }));

test('kill -9 during a retry: after the restart the run ends as interrupted and is not tried again', async () => {
  const provider = await startFakeProvider((_req, res) => {
    // The first try fails; the retry hangs until the gateway is killed.
    if (provider.requests.length === 1) unavailable(res, 0);
  });
  const dir = await tempStateDir();
  await config(dir, provider.baseUrl);
  const first = await spawnGateway(dir);
  let second: SpawnedGateway | undefined;
  try {
    const r = await first.hook('/hooks/agent', { message: 'x', model: 'fake/m', name: 'CutOff' });
    await eventually(async () => provider.requests.length === 2);
    await first.stop('SIGKILL');
    second = await spawnGateway(dir);
    const run = await finalRun(second, r.body.runId);
    assert.equal(run.status, 'error');
    assert.match(run.error, /interrupted: the gateway restarted during a retry/);
    assert.deepEqual(
      run.attempts.map((a: { status: string }) => a.status),
      ['error', 'error'],
    );
    const posted = await summaries(second, r.body.runId);
    assert.equal(posted.length, 1, JSON.stringify(posted));
    assert.match(posted[0]!, /^Hook CutOff \(error\): interrupted/);
    // A second start finds nothing left to do for it.
    await second.stop();
    second = await spawnGateway(dir);
    assert.equal((await second.admin(`/api/runs/${r.body.runId}`)).status, 'error');
    assert.equal((await summaries(second, r.body.runId)).length, 1);
    assert.equal(provider.requests.length, 2, 'never tried a third time');
  } finally {
    await first.stop();
    await second?.stop();
    await provider.close();
  }
});
