// In OpenClaw the runs list survives a restart: each run's end is kept in the plugin's state dir
// (runs.jsonl) with its hook and request, and the next process's run book lists it again; the file
// holds at most its bound, the oldest end going first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AcceptedRun, Logger, RunRecord } from '../../plugin/host.ts';
import { RunHistory } from '../../plugin/hosts/openclaw/run-history.ts';
import { RunBook } from '../../plugin/runs/run-book.ts';
import { runFailureId } from '../../plugin/runs/run-final.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const logger: Logger = { info() {}, warn() {}, error() {} };

function accepted(runId: string, hookId: string, requestId: string): RunRecord {
  const run = {
    runId,
    name: 'Nightly',
    hookId,
    requestId,
    agentId: 'main',
    sessionKey: `agent:main:hook:${runId}`,
    prompt: 'secret prompt text',
  } as unknown as AcceptedRun;
  return { runId, name: 'Nightly', status: 'queued', agentId: 'main', sessionKey: run.sessionKey, run };
}

function ended(start: RunRecord, status: 'ok' | 'error', error?: string): RunRecord {
  const { run: _run, ...rest } = start;
  return { ...rest, status, reply: 'the reply text', ...(error ? { error } : {}) };
}

test('the runs an OpenClaw process saw end are listed by the next one, with hook and request', async () => {
  const file = path.join(await tempDir('hookgate-run-history-'), 'runs.jsonl');
  const first = new RunHistory();
  await first.open(file, logger);
  assert.deepEqual(first.take(), []);
  const a = accepted('run-a', 'agent', 'req-a');
  const b = accepted('run-b', 'github', 'req-b');
  first.note(a);
  // Accepted in a later millisecond than a (ends are written in the other order below).
  const acceptedA = Date.now();
  while (Date.now() === acceptedA) await new Promise((resolve) => setImmediate(resolve));
  first.note(b);
  first.note({ ...ended(a, 'ok'), status: 'running' });
  first.note(ended(b, 'error', 'model refused'));
  first.note(ended(a, 'ok'));
  await first.close();
  const text = await readFile(file, 'utf8');
  assert.ok(!text.includes('secret prompt text') && !text.includes('the reply text'), 'no prompt or reply kept');

  const second = new RunHistory();
  await second.open(file, logger);
  const past = second.take();
  assert.deepEqual(
    past.map((r) => [r.runId, r.hookId, r.requestId, r.status]),
    [
      ['run-a', 'agent', 'req-a', 'ok'],
      ['run-b', 'github', 'req-b', 'error'],
    ],
  );
  assert.deepEqual(second.take(), [], 'handed over once');

  // The core's run book lists them as the process before did, a failure under its id.
  const book = new RunBook();
  book.restore(past);
  const listed = book.list({}, 100);
  assert.deepEqual(
    listed.runs.map((r) => [r.runId, r.hook, r.status]),
    [
      ['run-a', 'agent', 'ok'],
      ['run-b', 'github', 'error'],
    ],
  );
  assert.equal(listed.runs[1]!.failureId, runFailureId('run-b'));
  assert.equal(listed.runs[1]!.error, 'model refused');
  assert.deepEqual(
    book.list({ status: 'error' }, 100).runs.map((r) => r.runId),
    ['run-b'],
  );
  await second.close();
});

test('the run history keeps at most its bound, the oldest end going first', async () => {
  const file = path.join(await tempDir('hookgate-run-history-'), 'runs.jsonl');
  const history = new RunHistory(3);
  await history.open(file, logger);
  for (let i = 0; i < 5; i++) {
    const start = accepted(`run-${i}`, 'agent', `req-${i}`);
    history.note(start);
    history.note(ended(start, 'ok'));
  }
  await history.close();
  const again = new RunHistory(3);
  await again.open(file, logger);
  assert.deepEqual(
    again.take().map((r) => r.runId),
    ['run-2', 'run-3', 'run-4'],
  );
  await again.close();
});
