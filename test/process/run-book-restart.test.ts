// The runs list (GET /api/runs) of the real gateway process after a restart: the runs of the
// process before it are listed again from their session files, each with its final status, hook and
// request; a run a kill -9 cut off is listed as the interrupted error it is recorded as.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeProvider } from '../helpers/fake-provider.ts';
import { eventually, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

interface ListedRun {
  runId: string;
  hook: string;
  name: string;
  status: string;
  requestId?: string;
  at: string;
  updatedAt: string;
  error?: string;
  failureId?: string;
}

async function listed(gw: SpawnedGateway): Promise<Map<string, ListedRun>> {
  const page = (await gw.admin('/api/runs?limit=1000')) as { runs: ListedRun[] };
  return new Map(page.runs.map((run) => [run.runId, run]));
}

test('the runs list shows the runs of the last process after a restart, a kill -9 included', async () => {
  // "fail" is refused (a 400 is not retried); "hang" is never answered; anything else is answered.
  const provider = await startFakeProvider((req, res) => {
    const content = JSON.stringify(req.body.messages ?? []);
    if (content.includes('hang')) return;
    res.setHeader('content-type', 'application/json');
    if (content.includes('fail')) {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: { message: 'refused' } }));
      return;
    }
    res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'done' } }] }));
  });
  const dir = await tempStateDir();
  await writeConfig(dir, {
    models: { providers: { fake: { baseUrl: provider.baseUrl } } },
    agents: { defaults: { models: ['fake/m1'] }, list: [{ id: 'main', default: true }] },
  });
  const gateways: SpawnedGateway[] = [];
  try {
    const first = await spawnGateway(dir);
    gateways.push(first);
    const started = async (message: string, name: string): Promise<{ runId: string }> => {
      const r = await first.hook('/hooks/agent', { message, name, model: 'fake/m1', deliver: false });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      return { runId: r.body.runId };
    };
    const ok1 = await started('first job', 'Nightly');
    const ok2 = await started('second job', 'Nightly');
    const failed = await started('this one should fail', 'Doomed');
    const before = await eventually(async () => {
      const runs = await listed(first);
      const done = [ok1, ok2, failed].every((r) => ['ok', 'error'].includes(runs.get(r.runId)?.status ?? ''));
      return done && runs;
    }, 60_000);
    const cut = await started('hang here', 'Stuck');
    await eventually(async () => (await listed(first)).get(cut.runId)?.status === 'running', 60_000);
    // Killed mid-run: the hanging run's end is never seen by this process.
    await first.stop('SIGKILL');

    const second = await spawnGateway(dir);
    gateways.push(second);
    const after = await listed(second);
    for (const { runId } of [ok1, ok2, failed]) {
      const was = before.get(runId)!;
      const is = after.get(runId);
      assert.ok(is, `run ${runId} is listed after the restart`);
      assert.equal(is.status, was.status);
      assert.equal(is.hook, 'agent');
      assert.equal(is.name, was.name);
      assert.equal(is.requestId, was.requestId);
      assert.equal(is.at.slice(0, 16), was.at.slice(0, 16));
    }
    assert.match(after.get(ok1.runId)!.requestId ?? '', /\S/);
    assert.equal(after.get(ok1.runId)!.status, 'ok');
    const doomed = after.get(failed.runId)!;
    assert.equal(doomed.status, 'error');
    assert.match(doomed.error ?? '', /refused/);
    assert.equal(doomed.failureId, before.get(failed.runId)!.failureId);
    const stuck = after.get(cut.runId);
    assert.ok(stuck, 'the run cut off by the kill is listed');
    assert.equal(stuck.status, 'error');
    assert.match(stuck.error ?? '', /interrupted/);
    // Oldest first, as before the restart; the filters apply to the restored runs too.
    const order = [...after.keys()];
    assert.deepEqual(
      order.filter((id) => [ok1, ok2, failed, cut].some((r) => r.runId === id)),
      [ok1.runId, ok2.runId, failed.runId, cut.runId],
    );
    const errors = (await second.admin('/api/runs?status=error')) as { runs: ListedRun[] };
    assert.deepEqual(errors.runs.map((r) => r.runId).sort(), [failed.runId, cut.runId].sort());

    // A run of the new process is listed after those before it.
    const r = await second.hook('/hooks/agent', {
      message: 'after the restart',
      name: 'Nightly',
      model: 'fake/m1',
      deliver: false,
    });
    assert.equal(r.status, 202);
    await eventually(async () => (await listed(second)).get(r.body.runId)?.status === 'ok', 60_000);
    assert.equal([...(await listed(second)).keys()].at(-1), r.body.runId);
  } finally {
    for (const gw of gateways) if (gw.child.exitCode === null && gw.child.signalCode === null) await gw.stop();
    await provider.close();
  }
});
