// The failure book and the runs kept for replay hold their bounds from the start: a state file that
// holds more live records than they keep (written by hand, or under other bounds) is trimmed oldest
// first as it is read, so its size never decides the memory a start takes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FailureBook, MAX_FAILURES } from '../../../plugin/failures/failures.ts';
import { MAX_KEPT_RUNS, RunActions } from '../../../plugin/failures/run-actions.ts';
import type { GatewayHost } from '../../../plugin/host.ts';

const quiet: GatewayHost['logger'] = { info() {}, warn() {}, error() {} };
const run = (n: number) => ({ name: 'agent', agentId: 'main', sessionKey: `s${n}`, prompt: `p${n}`, timeoutMs: 1 });

async function withFile(name: string, lines: string[], use: (file: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kept-at-open-'));
  try {
    const file = path.join(dir, name);
    await writeFile(file, lines.join(''));
    await use(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('run-actions.jsonl holding more than MAX_KEPT_RUNS: the oldest are dropped at open', async () => {
  const n = MAX_KEPT_RUNS + 5;
  const lines = Array.from({ length: n }, (_, i) => `${JSON.stringify({ id: `run${i}`, r: { action: run(i) } })}\n`);
  await withFile('run-actions.jsonl', lines, async (file) => {
    const kept = await RunActions.open(file, quiet);
    for (let i = 0; i < 5; i++) assert.equal(kept.get(`run${i}`), undefined);
    assert.equal(kept.get('run5')?.action.prompt, 'p5');
    assert.equal(kept.get(`run${n - 1}`)?.action.prompt, `p${n - 1}`);
    await kept.close();
  });
});

test('failures.jsonl holding more than MAX_FAILURES: the oldest are dropped at open', async () => {
  const n = MAX_FAILURES + 5;
  const failure = (i: number) => ({
    id: `fail_${i.toString(16).padStart(16, '0')}`,
    seq: i + 1,
    kind: 'run',
    runId: `run${i}`,
    hook: 'agent',
    agentId: 'main',
    attempts: 1,
    lastError: 'error',
    firstAt: '2026-11-28T00:00:00.000Z',
    lastAt: '2026-11-28T00:00:00.000Z',
    state: 'open',
    action: { kind: 'run', ...run(i) },
  });
  const lines = Array.from({ length: n }, (_, i) => `${JSON.stringify({ id: failure(i).id, r: failure(i) })}\n`);
  await withFile('failures.jsonl', lines, async (file) => {
    const host = { logger: quiet, sessions: {} as GatewayHost['sessions'] };
    const book = await FailureBook.open(file, host, () => {});
    assert.equal(book.get(failure(4).id), undefined);
    assert.equal(book.get(failure(5).id)?.runId, 'run5');
    assert.equal(book.get(failure(n - 1).id)?.runId, `run${n - 1}`);
    await book.close();
  });
});
