// Retries of agent runs (hooks.retry) through the standalone gateway's real HTTP server and a fake
// model provider on loopback: what is tried again (503, 429 with Retry-After), what is not (400, a
// timeout), the attempts and the next try shown by GET /api/runs/<id>, one summary for the final
// outcome, and the retries counted in /metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { startGateway, type RunningGateway } from '../../plugin/hosts/standalone/server/gateway.ts';
import type { Logger } from '../../plugin/host.ts';
import { startFakeProvider, type FakeProvider, type ProviderRequest } from '../helpers/fake-provider.ts';
import { eventually, GATEWAY_TOKEN, HOOK_TOKEN, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { acceptedRun, post, startTestGateway, withGateway } from '../helpers/recording-host.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { RunRetries } from '../../plugin/runs/run-retries.ts';
import type { RunFinal } from '../../plugin/runs/run-final.ts';
import type { RunService } from '../../plugin/runs/run-service.ts';
import { AckJournal } from '../../plugin/hosts/openclaw/ack-journal.ts';

const quiet: Logger = { info() {}, warn() {}, error() {} };

interface Fixture {
  gw: RunningGateway;
  provider: FakeProvider;
  admin(p: string): Promise<any>;
  agent(body: Record<string, unknown>): Promise<string>;
  /** The run once it reached a final status. */
  final(runId: string): Promise<any>;
  summaries(runId: string): Promise<string[]>;
}

function completion(res: ServerResponse, content: string): void {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ choices: [{ message: { content } }] }));
}

/** A failed run's summary ends naming its failure (runs.test.ts checks it): left out here. */
const FAILURE_NOTE = / \(failure fail_[0-9a-f]{16}(, after \d+ attempts)?\)$/;
function summariesOf(events: readonly { text: string }[]): string[] {
  return events.map((e) => e.text.replace(FAILURE_NOTE, ''));
}

function failWith(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { message: `provider says ${status}` } }));
}

async function withRetries(
  retry: Record<string, number>,
  answer: (req: ProviderRequest, res: ServerResponse) => void,
  body: (f: Fixture) => Promise<void>,
): Promise<void> {
  const provider = await startFakeProvider(answer);
  const stateDir = await tempStateDir();
  const configPath = await writeConfig(stateDir, {
    hooks: { retry },
    models: { providers: { fake: { baseUrl: provider.baseUrl } } },
    agents: { defaults: { models: ['fake/m'] }, list: [{ id: 'main', default: true }] },
  });
  const gw = await startGateway({ configPath, stateDir, port: 0, host: '127.0.0.1', logger: quiet, gmail: false });
  const admin = async (p: string): Promise<any> => {
    const res = await fetch(gw.url + p, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
    return res.headers.get('content-type')?.includes('json') ? res.json() : res.text();
  };
  const fixture: Fixture = {
    gw,
    provider,
    admin,
    async agent(b) {
      const res = await fetch(`${gw.url}/hooks/agent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fake/m', ...b }),
      });
      const answer = (await res.json()) as { runId: string };
      assert.equal(res.status, 202, JSON.stringify(answer));
      return answer.runId;
    },
    final: (runId) =>
      eventually(async () => {
        const run = await admin(`/api/runs/${runId}`);
        return ['ok', 'error', 'timeout'].includes(run.status) && run;
      }),
    async summaries(runId) {
      const page = await admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/history?limit=1000`);
      // Every event of the run: its one summary (a failed run has no second event).
      return summariesOf((page.entries as { runId?: string; text: string }[]).filter((e) => e.runId === runId));
    },
  };
  try {
    await body(fixture);
  } finally {
    await gw.close();
    await provider.close();
  }
}

function retriesCounted(metrics: string): number {
  const line = metrics.split('\n').find((l) => l.startsWith('hookgate_retries_total{kind="run"}'));
  return line ? Number(line.split(' ').pop()) : 0;
}

const gapMs = (a: { at: string }, b: { at: string }): number => Date.parse(b.at) - Date.parse(a.at);

test('a provider answering 503 twice: tried again with the same runId, the third try ends ok, one summary', async () => {
  let calls = 0;
  const answer = (_req: ProviderRequest, res: ServerResponse): void =>
    ++calls <= 2 ? failWith(res, 503) : completion(res, 'third time lucky');
  await withRetries({ attempts: 5, initialDelaySeconds: 0.1, maxDelaySeconds: 0.2 }, answer, async (f) => {
    const runId = await f.agent({ message: 'flaky', name: 'Flaky' });
    const run = await f.final(runId);
    assert.equal(run.status, 'ok');
    assert.equal(run.reply, 'third time lucky');
    assert.equal(f.provider.requests.length, 3);
    assert.deepEqual(
      run.attempts.map((a: { status: string }) => a.status),
      ['error', 'error', 'ok'],
    );
    assert.match(run.attempts[0].error, /HTTP 503/);
    assert.equal(run.attempts[2].error, undefined);
    assert.equal(run.nextAttemptAt, undefined);
    // Each wait is drawn from the upper half of the backoff: 100 ms then 200 ms, at least half of each.
    assert.ok(gapMs(run.attempts[0], run.attempts[1]) >= 50, JSON.stringify(run.attempts));
    assert.ok(gapMs(run.attempts[1], run.attempts[2]) >= 100, JSON.stringify(run.attempts));
    assert.deepEqual(await f.summaries(runId), ['Hook Flaky: third time lucky']);
    assert.equal(retriesCounted(await f.admin('/metrics')), 2);
  });
});

test('429 with Retry-After: the announced wait is honoured; GET /api/runs shows retrying, attempts and nextAttemptAt', async () => {
  let calls = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const answer = (_req: ProviderRequest, res: ServerResponse): void => {
    if (++calls === 1) return failWith(res, 429, { 'retry-after': '1' });
    // The second try waits until the test has seen the run retrying.
    void released.then(() => completion(res, 'after the wait'));
  };
  await withRetries({ attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 5 }, answer, async (f) => {
    const runId = await f.agent({ message: 'busy provider', name: 'Busy' });
    const retrying = await eventually(async () => {
      const run = await f.admin(`/api/runs/${runId}`);
      return run.status === 'retrying' && run;
    });
    assert.equal(retrying.attempts.length, 1);
    assert.equal(retrying.attempts[0].status, 'error');
    assert.match(retrying.attempts[0].error, /HTTP 429/);
    assert.match(retrying.error, /HTTP 429/);
    // Retry-After (1 s) is longer than the backoff (0.1 s) and within the cap (5 s): it wins.
    assert.ok(
      Date.parse(retrying.nextAttemptAt) - Date.parse(retrying.attempts[0].at) >= 1000,
      JSON.stringify(retrying),
    );
    assert.deepEqual(await f.summaries(runId), [], 'no summary while the run is retrying');
    await eventually(async () => f.provider.requests.length === 2);
    release();
    const run = await f.final(runId);
    assert.equal(run.status, 'ok');
    assert.ok(gapMs(run.attempts[0], run.attempts[1]) >= 1000, JSON.stringify(run.attempts));
    assert.deepEqual(await f.summaries(runId), ['Hook Busy: after the wait']);
  });
});

test('a Retry-After given as an HTTP date is honoured too', async () => {
  let calls = 0;
  const answer = (_req: ProviderRequest, res: ServerResponse): void =>
    ++calls === 1
      ? failWith(res, 503, { 'retry-after': new Date(Date.now() + 3000).toUTCString() })
      : completion(res, 'back');
  await withRetries({ attempts: 2, initialDelaySeconds: 0.1, maxDelaySeconds: 5 }, answer, async (f) => {
    const runId = await f.agent({ message: 'later', name: 'Dated' });
    const run = await f.final(runId);
    assert.equal(run.status, 'ok');
    // The date has a resolution of one second: more than two seconds after the first try.
    assert.ok(gapMs(run.attempts[0], run.attempts[1]) >= 1900, JSON.stringify(run.attempts));
  });
});

test('every try failing with 503: the run ends as an error after hooks.retry.attempts tries, one summary', async () => {
  const answer = (_req: ProviderRequest, res: ServerResponse): void => failWith(res, 503);
  await withRetries({ attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 0.1 }, answer, async (f) => {
    const runId = await f.agent({ message: 'down', name: 'Down' });
    const run = await f.final(runId);
    assert.equal(run.status, 'error');
    assert.match(run.error, /HTTP 503/);
    assert.equal(run.attempts.length, 3);
    assert.equal(f.provider.requests.length, 3);
    const summaries = await f.summaries(runId);
    assert.equal(summaries.length, 1);
    assert.match(summaries[0]!, /^Hook Down \(error\): .*HTTP 503/);
    assert.equal(retriesCounted(await f.admin('/metrics')), 2);
    // The one event names the failure the book keeps, and the tries it took.
    const history = await f.admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/history?limit=1000`);
    const events = (history.entries as { runId?: string; text: string }[]).filter((e) => e.runId === runId);
    const failure = await eventually(async () => (await f.admin('/api/failures')).failures[0]);
    assert.equal(events.length, 1);
    assert.ok(events[0]!.text.endsWith(` (failure ${failure.id}, after 3 attempts)`), events[0]!.text);
  });
});

const notRetried: [string, (req: ProviderRequest, res: ServerResponse) => void, Record<string, unknown>, string][] = [
  ['a 400 is not tried again: the same request would be refused again', (_req, res) => failWith(res, 400), {}, 'error'],
  [
    'a provider hanging past the timeout is not tried again: the model may still be working',
    () => {}, // never answers
    { timeoutSeconds: 1 },
    'timeout',
  ],
];
for (const [title, answer, extra, status] of notRetried) {
  test(title, async () => {
    await withRetries({ attempts: 5, initialDelaySeconds: 0.1, maxDelaySeconds: 0.1 }, answer, async (f) => {
      const runId = await f.agent({ message: 'once', name: 'Once', ...extra });
      const run = await f.final(runId);
      assert.equal(run.status, status);
      if (status === 'error') assert.match(run.error, /HTTP 400/);
      assert.equal(run.attempts, undefined, 'a run tried once has no attempts list');
      assert.equal(f.provider.requests.length, 1);
      assert.equal((await f.summaries(runId)).length, 1);
      assert.equal(retriesCounted(await f.admin('/metrics')), 0);
    });
  });
}

test("a host's restore (OpenClaw's ack journal) never runs or ends twice a run the core resumes from retries.jsonl", async () => {
  const waiting = acceptedRun('r-waiting', 'waiting');
  const cut = acceptedRun('r-cut', 'cut');
  // The last process: both runs taken by OpenClaw and failed once; one waits, one's retry had started.
  const openclawState = await tempDir('hookgate-openclaw-');
  const stateDir = path.join(openclawState, 'hookgate', 'after');
  const journal = new AckJournal();
  await journal.open(openclawState);
  const retries = await RunRetries.open(stateDir, quiet);
  const firstTry = [{ at: new Date(Date.now() - 1000).toISOString(), status: 'error' as const, error: 'HTTP 503' }];
  for (const run of [waiting, cut]) {
    await journal.run(run);
    await journal.taken(run.runId);
    await retries.schedule(run, firstTry, Date.now() - 10);
  }
  await retries.starting(cut.runId);
  await retries.close();
  const pending = await new AckJournal().open(openclawState);
  assert.deepEqual(
    pending.interrupted.map((r) => r.runId),
    ['r-waiting', 'r-cut'],
    'the journal alone would call both interrupted',
  );

  await withGateway(
    { stateDir, restoreRuns: { rerun: pending.runs, interrupted: pending.interrupted } },
    async (gw) => {
      const [done, ended] = await Promise.all([gw.finalRun('r-waiting'), gw.finalRun('r-cut')]);
      assert.equal(done.status, 'ok');
      assert.equal(done.attempts?.length, 2);
      assert.deepEqual(
        gw.rec.turns.map((t) => t.runId),
        ['r-waiting'],
        'the due retry ran once; the cut-off one not again',
      );
      assert.equal(ended.status, 'error');
      assert.match(ended.error ?? '', /during a retry/);
      assert.deepEqual(summariesOf(gw.rec.events).sort(), [
        'Hook cut (error): interrupted: the gateway restarted during a retry, which is not tried again',
        'Hook waiting: reply to: 17 chars',
      ]);
      assert.ok(gw.plugin.runs.tookBack('r-waiting') && gw.plugin.runs.tookBack('r-cut'));
    },
  );
});

test('due retries queue past maxQueuedRuns and run within maxConcurrentRuns', async () => {
  let active = 0;
  let most = 0;
  const tries = new Map<string, number>();
  await withGateway(
    {
      hooks: {
        maxConcurrentRuns: 1,
        maxQueuedRuns: 1,
        retry: { attempts: 3, initialDelaySeconds: 0.1, maxDelaySeconds: 0.1 },
      },
      turn: async (turn) => {
        most = Math.max(most, ++active);
        await new Promise((resolve) => setTimeout(resolve, 20));
        active--;
        const n = (tries.get(turn.runId) ?? 0) + 1;
        tries.set(turn.runId, n);
        return n === 1 ? { status: 'error', error: 'HTTP 503', retryable: true } : { status: 'ok', reply: 'fine' };
      },
    },
    async (gw) => {
      const told: RunFinal[] = [];
      (gw.plugin.runs as RunService).onFinal((final) => told.push(final));
      const ids = await Promise.all(
        ['one', 'two'].map(async (name) => {
          const res = await post(gw.url, '/hooks/agent', { message: name, name });
          assert.equal(res.status, 202);
          return res.body.runId as string;
        }),
      );
      const finals = await Promise.all(ids.map((id) => gw.finalRun(id)));
      assert.deepEqual(
        finals.map((f) => [f.status, f.attempts?.length]),
        [
          ['ok', 2],
          ['ok', 2],
        ],
      );
      assert.equal(most, 1, 'never more than maxConcurrentRuns at once');
      assert.equal(gw.rec.events.length, 2, 'one summary each');
      // Final-outcome listeners are told once per run, after its last try, with every try.
      assert.deepEqual(
        told.map((f) => [f.run.runId, f.status, f.reply, f.attempts.map((a) => a.status)]).sort(),
        [
          [ids[0], 'ok', 'visible', ['error', 'ok']],
          [ids[1], 'ok', 'visible', ['error', 'ok']],
        ].sort(),
      );
    },
  );
});

test('without a stateDir the schedule lives in memory: a stop ends the waiting retries as errors, each with its summary', async () => {
  const gw = await startTestGateway({
    hooks: { retry: { attempts: 3, initialDelaySeconds: 3600, maxDelaySeconds: 3600 } },
    turn: async () => ({ status: 'error', error: 'HTTP 502', retryable: true }),
  });
  let closed = false;
  try {
    const runId = (await post(gw.url, '/hooks/agent', { message: 'm', name: 'Memory' })).body.runId as string;
    await eventually(async () => gw.rec.runUpdates.some((u) => u.runId === runId && u.status === 'retrying'));
    await gw.close();
    closed = true;
    const final = gw.rec.runUpdates.find((u) => u.runId === runId && u.status === 'error');
    assert.match(final?.error ?? '', /shut down/);
    assert.equal(final?.attempts?.length, 1);
    assert.deepEqual(summariesOf(gw.rec.events), [
      'Hook Memory (error): interrupted: the gateway shut down before the run finished',
    ]);
  } finally {
    if (!closed) await gw.close();
  }
});
