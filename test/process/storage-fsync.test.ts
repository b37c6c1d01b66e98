// storage.fsync on the real gateway, proved by the order of its system calls under strace rather
// than by timing: "always" syncs the session log after writing a wake's line and before writing the
// answer (and a run's 202 waits for its session's and the run index's syncs, a paused hook's 202
// held for the sync of the held actions' file); "interval" answers first and syncs later in the
// background; "never" does not sync.
// (test/ensure-strace.sh, npm test's first step, installs strace where it is missing.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  GATEWAY_TOKEN,
  SOURCE_CLI,
  START_BOUND_MS,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { waitUntil } from '../helpers/common.ts';
import { fdOf, parseStraceCalls, type SystemCall } from '../helpers/strace-calls.ts';

const TRACED = 'trace=write,writev,pwrite64,fdatasync,fsync,close,openat';
/** Generous: the gateway runs traced on a busy machine. */
const WAIT_MS = 60_000;

interface Traced {
  gw: SpawnedGateway;
  calls(): Promise<SystemCall[]>;
  /** Stops the traced gateway (SIGTERM to it, not to strace) and waits for strace to finish. */
  stop(): Promise<void>;
}

async function tracedGateway(storage: Record<string, unknown>): Promise<Traced> {
  const stateDir = await tempStateDir();
  await writeConfig(stateDir, { storage });
  const traceFile = path.join(stateDir, 'strace.txt');
  // --seccomp-bpf: only the traced calls stop the gateway; -s: long enough to show a line's text.
  const strace = ['strace', '-f', '-qq', '--seccomp-bpf', '-s', '512', '-e', TRACED, '-o', traceFile, '--'];
  const gw = await spawnGateway(stateDir, [], SOURCE_CLI, undefined, START_BOUND_MS, strace);
  return {
    gw,
    calls: async () => parseStraceCalls(await readFile(traceFile, 'utf8')),
    async stop() {
      const pid = gw.child.pid!;
      const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).trim().split(/\s+/);
      for (const child of children.filter(Boolean)) process.kill(Number(child), 'SIGTERM');
      await waitUntil(() => gw.child.exitCode !== null || gw.child.signalCode !== null, 'strace to exit', WAIT_MS);
    },
  };
}

/** Posts a wake whose text is `marker`; resolves with its status once answered. */
async function wake(gw: SpawnedGateway, marker: string): Promise<number> {
  const r = await gw.hook('/hooks/wake', { text: marker, mode: 'next-heartbeat' });
  return r.status;
}

const isWrite = (c: SystemCall): boolean => /^(write|writev|pwrite64)$/.test(c.name);
const isSync = (c: SystemCall): boolean => (c.name === 'fdatasync' || c.name === 'fsync') && c.result === '0';

interface WakeInTrace {
  calls: SystemCall[];
  /** The finished write of the wake's line to its session log (its descriptor is the log's). */
  line: SystemCall;
  /** The write of the HTTP answer after it (one request in flight). */
  answer: SystemCall;
}

/** The trace once it holds the wake's line and its answer (strace may write lines a little late). */
async function wakeInTrace(traced: Traced, marker: string): Promise<WakeInTrace> {
  let found: WakeInTrace | undefined;
  await waitUntil(
    async () => {
      const calls = await traced.calls();
      const line = calls.find(
        (c) => isWrite(c) && c.end >= 0 && c.args.includes('system-event') && c.args.includes(marker),
      );
      const answer = line && calls.find((c) => isWrite(c) && c.start > line.start && c.args.includes('HTTP/1.1 200'));
      if (line && answer) found = { calls, line, answer };
      return found !== undefined;
    },
    `the write of the line carrying ${marker} and of its answer in the trace`,
    WAIT_MS,
  );
  return found!;
}

/** The syncs of the log's descriptor after its line was written, until the descriptor closed. */
function syncsOfLog(calls: SystemCall[], line: SystemCall): SystemCall[] {
  const fd = fdOf(line);
  const closed = calls.find((c) => c.name === 'close' && fdOf(c) === fd && c.start > line.end);
  return calls.filter(
    (c) => isSync(c) && fdOf(c) === fd && c.start > line.end && (closed === undefined || c.end < closed.start),
  );
}

test('storage.fsync "always": the log is synced after the write of the line and before the answer is written', async () => {
  const traced = await tracedGateway({ fsync: 'always' });
  try {
    assert.equal(await wake(traced.gw, 'marker-always-1'), 200);
    const { calls, line, answer } = await wakeInTrace(traced, 'marker-always-1');
    const syncs = syncsOfLog(calls, line);
    assert.ok(syncs.length > 0, 'the log was synced');
    const first = syncs[0]!;
    assert.ok(first.start > line.end, 'the sync began after the line was written');
    assert.ok(first.end < answer.start, 'the sync finished before the answer was written');
  } finally {
    await traced.stop();
  }
});

test('storage.fsync "always": a run\'s 202 is written after the syncs of its session line and its run-index line', async () => {
  const traced = await tracedGateway({ fsync: 'always' });
  try {
    const accepted = await traced.gw.hook('/hooks/agent', { message: 'fsync run', deliver: false });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    // strace prints a string's quotes escaped.
    const runId = `\\"runId\\":\\"${String(accepted.body.runId)}\\"`;
    let found: { calls: SystemCall[]; session: SystemCall; index: SystemCall; answer: SystemCall } | undefined;
    await waitUntil(
      async () => {
        const calls = await traced.calls();
        const written = (c: SystemCall, also: string): boolean =>
          isWrite(c) && c.end >= 0 && c.args.includes(runId) && c.args.includes(also);
        const session = calls.find((c) => written(c, '\\"status\\":\\"queued\\"'));
        const index = calls.find((c) => written(c, '\\"session\\":'));
        const answer = calls.find((c) => isWrite(c) && c.args.includes('HTTP/1.1 202'));
        if (session && index && answer) found = { calls, session, index, answer };
        return found !== undefined;
      },
      "the writes of the run's lines and of its answer in the trace",
      WAIT_MS,
    );
    const { calls, session, index, answer } = found!;
    assert.notEqual(fdOf(session), fdOf(index), 'two files');
    for (const [what, line] of [
      ['session', session],
      ['run index', index],
    ] as const) {
      const sync = syncsOfLog(calls, line)[0];
      assert.ok(sync, `the ${what} log was synced`);
      assert.ok(sync.end < answer.start, `the ${what} log's sync finished before the 202 was written`);
    }
    // The run's own session is a new file: its name is made durable too, by a sync of its directory.
    const sessionsDir = calls.find(
      (c) => c.name === 'openat' && c.start > session.end && /data\/sessions", O_RDONLY/.test(c.args),
    );
    assert.ok(sessionsDir, 'the sessions directory was opened after the line was written');
    const dirSync = calls.find((c) => isSync(c) && fdOf(c) === Number(sessionsDir.result) && c.start > sessionsDir.end);
    assert.ok(dirSync, 'the sessions directory was synced');
    assert.ok(dirSync.end < answer.start, 'the directory was synced before the 202 was written');
  } finally {
    await traced.stop();
  }
});

/** Pauses the wake hook and sends a wake it holds; resolves with the held line's write and its 202's. */
async function heldInTrace(traced: Traced, marker: string): Promise<WakeInTrace> {
  const paused = await fetch(`${traced.gw.url}/api/hooks/wake/pause`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_TOKEN}` },
  });
  assert.equal(paused.status, 200);
  const held = await traced.gw.hook('/hooks/wake', { text: marker, mode: 'next-heartbeat' });
  assert.equal(held.status, 202, JSON.stringify(held.body));
  assert.equal(held.body.held, true);
  let found: WakeInTrace | undefined;
  await waitUntil(
    async () => {
      const calls = await traced.calls();
      // The held action's line: the action as rendered, its text the marker, written to a
      // descriptor the held actions' file was opened for appending on.
      const appends = calls.filter(
        (c) => c.name === 'openat' && /held\.jsonl"/.test(c.args) && /O_APPEND/.test(c.args),
      );
      const line = calls.find(
        (c) =>
          isWrite(c) &&
          c.end >= 0 &&
          c.args.includes(marker) &&
          !c.result?.startsWith('-1') &&
          appends.some((o) => Number(o.result) === fdOf(c) && o.end < c.start),
      );
      const answer = line && calls.find((c) => isWrite(c) && c.start > line.start && c.args.includes('HTTP/1.1 202'));
      if (line && answer) found = { calls, line, answer };
      return found !== undefined;
    },
    'the write of the held line and of its answer in the trace',
    WAIT_MS,
  );
  return found!;
}

test('storage.fsync "always": a paused hook\'s 202 held is written after the sync of the held actions\' file', async () => {
  const traced = await tracedGateway({ fsync: 'always' });
  try {
    const { calls, line, answer } = await heldInTrace(traced, 'marker-held-always');
    const sync = syncsOfLog(calls, line)[0];
    assert.ok(sync, "the held actions' file was synced");
    assert.ok(sync.end < answer.start, 'the sync finished before the 202 was written');
  } finally {
    await traced.stop();
  }
});

test('storage.fsync "interval": a paused hook\'s 202 held is written first, the held actions\' file synced after', async () => {
  const traced = await tracedGateway({ fsync: 'interval', fsyncIntervalMs: 1000 });
  try {
    const { line, answer } = await heldInTrace(traced, 'marker-held-interval');
    let sync: SystemCall | undefined;
    await waitUntil(
      async () => (sync = syncsOfLog(await traced.calls(), line)[0]) !== undefined,
      "a sync of the held actions' file after the line",
      WAIT_MS,
    );
    assert.ok(answer.start < sync!.start, 'the answer was written before the sync began: it did not wait');
  } finally {
    await traced.stop();
  }
});

test('storage.fsync "interval": the answer is written before the sync, and a sync follows in the background', async () => {
  const traced = await tracedGateway({ fsync: 'interval', fsyncIntervalMs: 1000 });
  try {
    assert.equal(await wake(traced.gw, 'marker-interval-1'), 200);
    const { line, answer } = await wakeInTrace(traced, 'marker-interval-1');
    // No timing: the background sync is awaited as a state of the trace.
    let sync: SystemCall | undefined;
    await waitUntil(
      async () => (sync = syncsOfLog(await traced.calls(), line)[0]) !== undefined,
      'a sync of the log after the line',
      WAIT_MS,
    );
    assert.ok(answer.start < sync!.start, 'the answer was written before the sync began: it did not wait');
  } finally {
    await traced.stop();
  }
});

test('storage.fsync "never": the log is never synced, not even when the gateway stops', async () => {
  const traced = await tracedGateway({ fsync: 'never' });
  let stopped = false;
  try {
    assert.equal(await wake(traced.gw, 'marker-never-1'), 200);
    await traced.stop();
    stopped = true;
    // The whole trace: strace has exited.
    const { calls, line } = await wakeInTrace(traced, 'marker-never-1');
    assert.deepEqual(syncsOfLog(calls, line), []);
  } finally {
    if (!stopped) await traced.stop();
  }
});
