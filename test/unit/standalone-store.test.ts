import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LogFields, Logger, RunRecord } from '../../plugin/host.ts';
import {
  CommitRounds,
  LONE_ROUND_LINES,
  ROUND_GAP_MS,
} from '../../plugin/hosts/standalone/storage/log/commit-rounds.ts';
import { JsonlLog, LogResources } from '../../plugin/hosts/standalone/storage/log/jsonl-log.ts';
import { Outbox } from '../../plugin/hosts/standalone/storage/outbox.ts';
import {
  readRun,
  REPLY_BYTES_IN_MEMORY,
  RunRegistry,
  type RunLine,
} from '../../plugin/hosts/standalone/storage/run-registry.ts';
import {
  PENDING_TEXT_MAX,
  SessionStore,
  decodeSessionFileName,
  sessionFileName,
} from '../../plugin/hosts/standalone/storage/session-store.ts';

interface LogLine {
  level: 'info' | 'warn' | 'error';
  msg: string;
  fields?: LogFields;
}

function recordingLogger(): Logger & { lines: LogLine[]; warnings(): string[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (msg, fields) => void lines.push({ level: 'info', msg, fields }),
    warn: (msg, fields) => void lines.push({ level: 'warn', msg, fields }),
    error: (msg, fields) => void lines.push({ level: 'error', msg, fields }),
    warnings: () => lines.filter((l) => l.level === 'warn').map((l) => l.msg),
  };
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hookgate-store-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function fileLines(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  assert.ok(text.endsWith('\n'), 'file ends with a newline');
  return text.slice(0, -1).split('\n');
}

interface Rec {
  n: number;
  s?: string;
}

test('group commit: appends of one tick go out in one write, in order', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'nested', 'deeper', 'log.jsonl');
    const log = new JsonlLog<Rec>(file, recordingLogger());
    const appends: Promise<void>[] = [];
    for (let n = 0; n < 200; n++) appends.push(log.append({ n }));
    // A read right after appending sees the records still waiting in the batch.
    const early = await log.readAll();
    assert.deepEqual(
      early.map((r) => r.n),
      Array.from({ length: 200 }, (_, i) => i),
    );
    await Promise.all(appends);
    assert.equal(log.appendCount, 200);
    assert.equal(log.writeCount, 1, 'all 200 records shared one write');

    const lines = await fileLines(file);
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as Rec).n),
      Array.from({ length: 200 }, (_, i) => i),
    );
    await log.close();
  });
});

test('group commit: appends from promise continuations and during an in-flight write are batched', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    const log = new JsonlLog<Rec>(file, recordingLogger());
    const appends: Promise<void>[] = [];
    for (let n = 0; n < 50; n++) {
      appends.push(log.append({ n }));
      await Promise.resolve(); // a microtask hop: still the same tick
    }
    await Promise.all(appends);
    assert.equal(log.writeCount, 1);

    // Keep appending one record per event-loop turn while writes are in flight.
    const more: Promise<void>[] = [];
    for (let n = 50; n < 150; n++) {
      more.push(log.append({ n }));
      if (n % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(more);
    const laterWrites = log.writeCount - 1;
    assert.ok(laterWrites >= 1 && laterWrites <= 20, `100 appends over ~10 turns took ${laterWrites} writes`);
    await log.flush();
    const all = await log.readAll();
    assert.deepEqual(
      all.map((r) => r.n),
      Array.from({ length: 150 }, (_, i) => i),
    );
  });
});

/** Commit rounds that run only when the test says: what a log does between rounds is then visible. */
class HeldRounds extends CommitRounds {
  readonly held: (() => void)[] = [];
  holding = true;
  override inNextRound(write: () => void): void {
    if (this.holding) this.held.push(write);
    else super.inNextRound(write);
  }
  release(): void {
    for (const write of this.held.splice(0)) write();
  }
}

class HeldResources extends LogResources {
  override readonly rounds = new HeldRounds();
}

// With the rounds' own gap (the tests below), this is what keeps a steady stream of appends from
// making a write every turn or two: the log writes only in a round, once, whatever gathered since.
test('group commit: under a steady stream of appends, the log writes only in commit rounds, one write per round', async () => {
  await withTempDir(async (dir) => {
    const resources = new HeldResources();
    const log = new JsonlLog<Rec>(path.join(dir, 'log.jsonl'), recordingLogger(), { resources });
    const first = log.append({ n: -1 });
    resources.rounds.release();
    await first; // the file is open and the first write is behind us
    const before = log.writeCount;
    const appends: Promise<void>[] = [];
    for (let n = 0; n < 200; n++) {
      appends.push(log.append({ n }));
      await new Promise((r) => setImmediate(r)); // one append per event-loop turn
    }
    assert.equal(log.writeCount, before, 'no write outside a round');
    assert.equal(resources.rounds.held.length, 1, 'one round asked for, however many appends wait');
    resources.rounds.release();
    await Promise.all(appends);
    assert.equal(log.writeCount, before + 1);
    resources.rounds.holding = false;
    assert.equal((await log.readAll()).length, 201);
    await log.close();
  });
});

test('commit rounds: writes asked for in one turn run together; under load the next round waits out the gap', async () => {
  const rounds = new CommitRounds();
  const ran: { name: string; at: number }[] = [];
  const note = (name: string): number => ran.push({ name, at: performance.now() });
  const round = (name: string, then?: () => void): Promise<void> =>
    new Promise((resolve) =>
      rounds.inNextRound(() => {
        note(name);
        then?.();
        resolve();
      }),
    );
  // A microtask queued by the first write runs only once the round has run them all: they ran as one.
  for (let i = 0; i <= LONE_ROUND_LINES; i++) rounds.lineQueued();
  await Promise.all([round('a', () => queueMicrotask(() => note('microtask after a'))), round('b'), round('c')]);
  assert.deepEqual(
    ran.map((r) => r.name),
    ['a', 'b', 'c', 'microtask after a'],
  );

  await round('d');
  const gap = ran.at(-1)!.at - ran[0]!.at;
  assert.ok(gap >= ROUND_GAP_MS - 0.05, `the next round ran ${gap.toFixed(3)} ms after the first`);
});

test('commit rounds: after a round of a lone line the next runs on the next turn; after a loaded one, after the gap', async () => {
  const order = async (linesInFirstRound: number): Promise<string[]> => {
    const rounds = new CommitRounds();
    const seen: string[] = [];
    for (let i = 0; i < linesInFirstRound; i++) rounds.lineQueued();
    await new Promise<void>((done) =>
      rounds.inNextRound(() => {
        // Asked for from inside a round: at once, the gap has not passed.
        rounds.inNextRound(() => {
          seen.push('next round');
          if (seen.length === 2) done();
        });
        setImmediate(() => {
          seen.push('next turn');
          if (seen.length === 2) done();
        });
      }),
    );
    return seen;
  };
  assert.deepEqual(await order(1), ['next round', 'next turn']);
  assert.deepEqual(await order(LONE_ROUND_LINES + 1), ['next turn', 'next round']);
});

test('write(): records nobody waits for share the batch and its order; flush() waits for them', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    const log = new JsonlLog<Rec>(file, recordingLogger());
    log.write({ n: 0 });
    const awaited = log.append({ n: 1 });
    log.write({ n: 2 });
    await awaited;
    await log.flush();
    assert.equal(log.writeCount, 1);
    assert.deepEqual(
      (await fileLines(file)).map((l) => (JSON.parse(l) as Rec).n),
      [0, 1, 2],
    );
    await log.close();
  });
});

test('write(): a failed write is logged with the file and record count, and nothing throws', async () => {
  await withTempDir(async (dir) => {
    // The log's path is a directory: every write fails.
    const file = path.join(dir, 'taken');
    await mkdir(file);
    const logger = recordingLogger();
    const log = new JsonlLog<Rec>(file, logger);
    log.write({ n: 1 });
    log.write({ n: 2 });
    await log.flush();
    const errors = logger.lines.filter((l) => l.level === 'error');
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.fields?.file, file);
    assert.equal(errors[0]!.fields?.records, 2);
  });
});

test('durability: a fresh JsonlLog reads what a previous instance wrote; missing file is empty', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    assert.deepEqual(await new JsonlLog<Rec>(file, recordingLogger()).readAll(), []);

    const first = new JsonlLog<Rec>(file, recordingLogger());
    void first.append({ n: 1, s: 'line\nbreak "quoted"' });
    void first.append({ n: 2, s: 'ünïcødé 🎉' });
    await first.close();

    const second = new JsonlLog<Rec>(file, recordingLogger());
    assert.deepEqual(await second.readAll(), [
      { n: 1, s: 'line\nbreak "quoted"' },
      { n: 2, s: 'ünïcødé 🎉' },
    ]);
    await second.append({ n: 3 });
    await second.close();
    assert.equal((await fileLines(file)).length, 3);
  });
});

test('torn last line: skipped with a warning naming the file, next append writes valid lines', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    await writeFile(file, '{"n":1}\n{"n":2}\n{"n":3,"s":"half-writ');

    const logger = recordingLogger();
    const log = new JsonlLog<Rec>(file, logger);
    assert.deepEqual(await log.readAll(), [{ n: 1 }, { n: 2 }]);
    assert.ok(
      logger.warnings().some((m) => m.includes(file)),
      `a warning names the file: ${JSON.stringify(logger.warnings())}`,
    );

    await log.append({ n: 4 });
    await log.close();
    const lines = await fileLines(file);
    assert.deepEqual(
      lines.map((l) => JSON.parse(l) as Rec),
      [{ n: 1 }, { n: 2 }, { n: 4 }],
    );
  });
});

test('torn last line: repaired lazily by the first append too', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    await writeFile(file, '{"n":1}\n{"n":');
    const logger = recordingLogger();
    const log = new JsonlLog<Rec>(file, logger);
    await log.append({ n: 2 });
    await log.close();
    assert.deepEqual(
      (await fileLines(file)).map((l) => JSON.parse(l) as Rec),
      [{ n: 1 }, { n: 2 }],
    );
    assert.ok(logger.warnings().some((m) => m.includes(file)));
  });
});

test('a complete last record missing only its newline is kept', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    await writeFile(file, '{"n":1}\n{"n":2}');
    const log = new JsonlLog<Rec>(file, recordingLogger());
    await log.append({ n: 3 });
    assert.deepEqual(await log.readAll(), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await log.close();
  });
});

test('unparseable lines in the middle are skipped with a warning, never thrown', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    await writeFile(file, '{"n":1}\nnot json\n[1,2]\n\n{"n":2}\n');
    const logger = recordingLogger();
    const log = new JsonlLog<Rec>(file, logger);
    assert.deepEqual(await log.readAll(), [{ n: 1 }, { n: 2 }]);
    assert.equal(logger.warnings().filter((m) => m.includes(file)).length, 2);
  });
});

test('session store: history, list and agent ids survive a restart', async () => {
  await withTempDir(async (dir) => {
    const sessionsDir = path.join(dir, 'state', 'sessions');
    const store = new SessionStore(sessionsDir, recordingLogger());
    await store.open();
    assert.deepEqual(store.list(), []);
    await Promise.all([
      store.append('agent:ops:main', {
        kind: 'system-event',
        text: 'disk full',
        hook: 'wake',
        at: '2024-01-01T00:00:00.000Z',
      }),
      store.append('agent:ops:hook:gmail:1', {
        kind: 'prompt',
        text: 'summarise',
        runId: 'r1',
        at: '2024-01-01T00:00:01.000Z',
      }),
      store.append('agent:ops:hook:gmail:1', {
        kind: 'reply',
        text: 'done',
        runId: 'r1',
        at: '2024-01-01T00:00:02.000Z',
      }),
      store.append('plain-key', { kind: 'prompt', text: 'hello' }),
    ]);
    const before = store.list();
    await store.close();

    const again = new SessionStore(sessionsDir, recordingLogger());
    await again.open();
    assert.deepEqual(again.list(), before);
    assert.deepEqual(
      again.list().map((s) => [s.key, s.agentId]),
      [
        ['agent:ops:hook:gmail:1', 'ops'],
        ['agent:ops:main', 'ops'],
        ['plain-key', 'main'],
      ],
    );
    assert.equal(again.list()[0]!.updatedAt, '2024-01-01T00:00:02.000Z');
    assert.deepEqual(await again.history('agent:ops:hook:gmail:1'), [
      { kind: 'prompt', text: 'summarise', at: '2024-01-01T00:00:01.000Z', runId: 'r1' },
      { kind: 'reply', text: 'done', at: '2024-01-01T00:00:02.000Z', runId: 'r1' },
    ]);
    const plain = await again.history('plain-key');
    assert.equal(plain.length, 1);
    assert.ok(!Number.isNaN(Date.parse(plain[0]!.at)), 'a default ISO time is filled in');
    assert.deepEqual(await again.history('agent:nobody:main'), []);
    await again.close();
  });
});

test('session store: a large pending event waits clipped in memory; the file keeps it whole', async () => {
  await withTempDir(async (dir) => {
    const key = 'agent:main:main';
    const big = `start ${'x'.repeat(200 * 1024)} end`;
    const store = new SessionStore(dir, recordingLogger());
    await store.open();
    await store.append(key, { kind: 'system-event', text: big, hook: 'wake' });
    await store.append(key, { kind: 'system-event', text: 'small', hook: 'wake' });
    const [clipped, small] = store.takePending(key);
    assert.equal(clipped, `${big.slice(0, PENDING_TEXT_MAX)}… (clipped)`);
    assert.equal(small, 'small');
    assert.equal((await store.history(key)).find((e) => e.kind === 'system-event')?.text, big);
    await store.close();

    const restarted = new SessionStore(dir, recordingLogger());
    await restarted.open();
    assert.deepEqual(restarted.takePending(key), [clipped, 'small']);
    await restarted.close();
  });
});

test('session store: pending system events are rebuilt after a restart and cleared by heartbeats', async () => {
  await withTempDir(async (dir) => {
    const key = 'agent:main:main';
    const store = new SessionStore(dir, recordingLogger());
    await store.open();
    await store.append(key, { kind: 'system-event', text: 'one', hook: 'wake' });
    await store.append(key, { kind: 'system-event', text: 'two', hook: 'wake' });
    assert.equal(store.pendingCount(key), 2);
    void store.append(key, { kind: 'heartbeat', text: 'heartbeat' });
    assert.equal(store.pendingCount(key), 0, 'a heartbeat entry clears pending events at once');
    await store.append(key, { kind: 'system-event', text: 'three', hook: 'wake' });
    await store.append(key, { kind: 'system-event', text: 'four', hook: 'gmail' });
    assert.equal(store.pendingCount(key), 2);
    await store.close();

    const restarted = new SessionStore(dir, recordingLogger());
    await restarted.open();
    assert.equal(restarted.pendingCount(key), 2);
    assert.deepEqual(restarted.takePending(key), ['three', 'four']);
    assert.equal(restarted.pendingCount(key), 0);
    assert.deepEqual(restarted.takePending(key), []);
    assert.deepEqual(restarted.takePending('agent:main:unknown'), []);
    await restarted.append(key, { kind: 'heartbeat', text: 'heartbeat' });
    await restarted.close();

    const third = new SessionStore(dir, recordingLogger());
    await third.open();
    assert.equal(third.pendingCount(key), 0, 'the heartbeat entry made them non-pending on disk too');
    const kinds = (await third.history(key)).map((e) => e.kind);
    assert.deepEqual(kinds, ['system-event', 'system-event', 'heartbeat', 'system-event', 'system-event', 'heartbeat']);
    await third.close();
  });
});

test('session store: hostile and unicode keys map to files directly inside the dir', async () => {
  await withTempDir(async (root) => {
    const dir = path.join(root, 'sessions');
    const keys = [
      'agent:main:main',
      'agent:main:../../../etc/passwd',
      'agent:main:a/b\\c',
      '..',
      '.',
      '.hidden',
      'agent:main:héllo wörld 🎉',
      'agent:main:Main',
      'agent:main:main ',
      'agent:main:' + 'x'.repeat(400),
      'agent:main:' + '日本語'.repeat(100),
      'agent:main:' + 'x'.repeat(400) + 'y',
    ];
    for (const key of keys) {
      const name = sessionFileName(key);
      assert.ok(!name.includes('/') && !name.includes('\\') && !name.includes('..'), name);
      assert.ok(Buffer.byteLength(name) <= 255, `name too long for ${key.slice(0, 30)}`);
      assert.equal(name, name.toLowerCase(), 'no upper case (case-insensitive file systems)');
      if (!name.includes('~')) assert.equal(decodeSessionFileName(name), key);
    }
    assert.equal(new Set(keys.map((k) => sessionFileName(k).toLowerCase())).size, keys.length, 'distinct names');

    const store = new SessionStore(dir, recordingLogger());
    await store.open();
    await Promise.all(keys.map((key, i) => store.append(key, { kind: 'prompt', text: `t${i}` })));
    await store.close();

    assert.deepEqual(await readdir(root), ['sessions'], 'nothing written outside the sessions dir');
    const files = await readdir(dir);
    assert.equal(files.length, keys.length);
    for (const f of files) assert.ok((await stat(path.join(dir, f))).isFile());

    const again = new SessionStore(dir, recordingLogger());
    await again.open();
    assert.deepEqual(
      again.list().map((s) => s.key),
      [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    for (const [i, key] of keys.entries()) {
      assert.deepEqual(
        (await again.history(key)).map((e) => e.text),
        [`t${i}`],
      );
    }
    await again.close();
  });
});

test('outbox: entries persist, lastRoute follows the latest delivery per agent', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'outbox.jsonl');
    const outbox = new Outbox(file, recordingLogger());
    await outbox.open();
    assert.deepEqual(await outbox.list(), []);
    assert.equal(outbox.lastRoute('main'), undefined);

    await outbox.append({ channel: 'telegram', to: '123', text: 'first', runId: 'r1', agentId: 'main' });
    await outbox.append({ channel: 'slack', text: 'ops note', runId: 'r2', agentId: 'ops' });
    await outbox.append({ channel: 'discord', to: 'chan-9', text: 'second', runId: 'r3', agentId: 'main' });
    assert.deepEqual(outbox.lastRoute('main'), { channel: 'discord', to: 'chan-9' });
    assert.deepEqual(outbox.lastRoute('ops'), { channel: 'slack' });
    await outbox.close();

    const again = new Outbox(file, recordingLogger());
    await again.open();
    const list = await again.list();
    assert.deepEqual(
      list.map((e) => [e.channel, e.to, e.text, e.runId, e.agentId]),
      [
        ['telegram', '123', 'first', 'r1', 'main'],
        ['slack', undefined, 'ops note', 'r2', 'ops'],
        ['discord', 'chan-9', 'second', 'r3', 'main'],
      ],
    );
    for (const e of list) assert.ok(!Number.isNaN(Date.parse(e.at)));
    assert.deepEqual(again.lastRoute('main'), { channel: 'discord', to: 'chan-9' });
    assert.deepEqual(again.lastRoute('ops'), { channel: 'slack' });
    assert.equal(again.lastRoute('nobody'), undefined);
    await again.close();
  });
});

test('group commit: a batch larger than the write buffer goes out whole and in order over several writes', async () => {
  await withTempDir(async (dir) => {
    const file = path.join(dir, 'log.jsonl');
    const log = new JsonlLog<Rec>(file, recordingLogger());
    // 40 records of 100 KB, one of 3 MB: several buffers' worth, and one record larger than a buffer.
    const appends: Promise<void>[] = [];
    for (let n = 0; n < 40; n++) appends.push(log.append({ n, s: String.fromCharCode(97 + (n % 26)).repeat(100_000) }));
    appends.push(log.append({ n: 40, s: 'z'.repeat(3_000_000) }));
    appends.push(log.append({ n: 41 }));
    await Promise.all(appends);
    assert.ok(log.writeCount >= 5, `4 MB took ${log.writeCount} writes`);
    const lines = await fileLines(file);
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as Rec).n),
      Array.from({ length: 42 }, (_, i) => i),
    );
    for (const l of lines) {
      const r = JSON.parse(l) as Rec;
      if (r.n < 40) assert.equal(r.s, String.fromCharCode(97 + (r.n % 26)).repeat(100_000));
    }
    assert.equal((JSON.parse(lines[40]!) as Rec).s!.length, 3_000_000);

    // The buffers are reused: a later small batch is written whole, without stale bytes.
    await log.append({ n: 42 });
    assert.deepEqual(JSON.parse((await fileLines(file))[42]!), { n: 42 });
    await log.close();
  });
});

test('run registry: keeps the 10,000 most recently accepted runs in memory, each with its latest status', () => {
  const written: { key: string; line: RunLine; wait: boolean }[] = [];
  const registry = new RunRegistry((key, line, wait) => {
    written.push({ key, line, wait });
    return wait ? Promise.resolve() : undefined;
  });
  const run = (n: number, status: 'queued' | 'running' | 'ok') => ({
    runId: `run-${n}`,
    name: 'agent',
    status,
    agentId: 'main',
    sessionKey: 'agent:main:hook:x',
  });
  for (let n = 0; n < 10_005; n++) {
    void registry.update(run(n, 'queued'));
    void registry.update(run(n, 'running'));
    // Every other run finishes at once; the rest are left running.
    if (n % 2 === 0) void registry.update({ ...run(n, 'ok'), reply: `reply ${n}` });
  }
  for (let n = 0; n < 5; n++) assert.equal(registry.get(`run-${n}`), undefined, `run-${n} is forgotten`);
  assert.equal(registry.get('run-5')?.status, 'running');
  assert.deepEqual(registry.get('run-6'), { ...run(6, 'ok'), reply: 'reply 6' });
  assert.equal(registry.get('run-10004')?.status, 'ok');
  // A forgotten run that still ends is remembered again, in place of the oldest.
  void registry.update({ ...run(1, 'ok'), reply: 'late' });
  assert.equal(registry.get('run-1')?.reply, 'late');
  assert.equal(registry.get('run-5'), undefined);
  assert.equal(registry.get('run-7')?.status, 'running');

  // Lines go to the run's session: acceptance waited for, "running" never written, the reply left to the history.
  const [accepted, finished] = written.filter((w) => w.line.runId === 'run-6');
  assert.deepEqual([accepted?.key, accepted?.line.status, accepted?.wait], ['agent:main:hook:x', 'queued', true]);
  assert.deepEqual([finished?.line.status, finished?.wait, 'reply' in finished!.line], ['ok', false, false]);
  assert.equal(written.length, 10_005 + 5_003 + 1);
});

test('run registry: rebuilt from the session files, with the reply from the history and the runs never finished', async () => {
  await withTempDir(async (dir) => {
    const open = async () => {
      const registry: RunRegistry = new RunRegistry(
        (key, line, wait) => store.recordRun(key, line, wait),
        // The run index's job in the gateway: here every run of the test is in a session it names.
        (runId) =>
          readRun(
            (key, needle, visit) => store.scanBackward(key, needle, visit),
            runId === 'r-ok' ? 'agent:ops:hook:a' : 'agent:ops:hook:b',
            runId,
          ),
      );
      const store: SessionStore = new SessionStore(dir, recordingLogger(), (key, records) =>
        registry.restore(key, records),
      );
      await store.open();
      return { store, registry, unfinished: registry.restored() };
    };
    const first = await open();
    const record = (runId: string, sessionKey: string, status: RunRecord['status'], more: Partial<RunRecord> = {}) => ({
      runId,
      name: 'Deploy',
      status,
      agentId: 'ops',
      sessionKey,
      ...more,
    });
    await first.registry.update(record('r-ok', 'agent:ops:hook:a', 'queued'));
    await first.store.append('agent:ops:hook:a', { kind: 'prompt', text: 'deploy?', runId: 'r-ok' });
    await first.store.append('agent:ops:hook:a', { kind: 'reply', text: 'deployed', runId: 'r-ok' });
    void first.registry.update(record('r-ok', 'agent:ops:hook:a', 'ok', { reply: 'deployed' }));
    await first.registry.update(record('r-failed', 'agent:ops:hook:b', 'queued'));
    await first.store.append('agent:ops:hook:b', { kind: 'reply', text: '', runId: 'r-failed', error: 'model down' });
    void first.registry.update(record('r-failed', 'agent:ops:hook:b', 'error', { error: 'model down' }));
    await first.registry.update(record('r-cut', 'agent:ops:hook:b', 'queued'));
    void first.registry.update(record('r-cut', 'agent:ops:hook:b', 'running'));
    await first.store.close();

    const second = await open();
    // A restored reply stays in its session file until the run is asked for.
    assert.deepEqual(second.registry.get('r-ok'), record('r-ok', 'agent:ops:hook:a', 'ok'));
    assert.deepEqual(
      await second.registry.find('r-ok'),
      record('r-ok', 'agent:ops:hook:a', 'ok', { reply: 'deployed' }),
    );
    assert.deepEqual(
      second.registry.get('r-failed'),
      record('r-failed', 'agent:ops:hook:b', 'error', { error: 'model down' }),
    );
    assert.deepEqual(second.unfinished, [record('r-cut', 'agent:ops:hook:b', 'queued')]);
    // Status lines are in the file but not in the history.
    assert.deepEqual(
      (await second.store.history('agent:ops:hook:a')).map((e) => e.kind),
      ['prompt', 'reply'],
    );
    assert.equal((await second.store.history('agent:ops:hook:b')).length, 1);
    assert.match(
      await readFile(path.join(dir, sessionFileName('agent:ops:hook:b')), 'utf8'),
      /"kind":"run","runId":"r-cut","status":"queued"/,
    );
    await second.store.close();
  });
});

test('run registry: a restart keeps the 10,000 most recently accepted runs across session files, and every unfinished one', () => {
  const registry = new RunRegistry(() => undefined);
  const at = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString();
  const line = (n: number, status: RunLine['status']): RunLine => ({
    kind: 'run',
    runId: `run-${n}`,
    status,
    name: 'agent',
    agentId: 'main',
    at: at(n),
  });
  // Two sessions whose runs alternate in time; the oldest run of all was never finished.
  const files: Record<string, object[]> = { 'agent:main:hook:even': [], 'agent:main:hook:odd': [] };
  for (let n = 0; n < 10_010; n++) {
    const file = files[n % 2 === 0 ? 'agent:main:hook:even' : 'agent:main:hook:odd']!;
    file.push(line(n, 'queued'));
    if (n > 0) file.push({ kind: 'reply', text: `reply ${n}`, runId: `run-${n}`, at: at(n) }, line(n, 'ok'));
  }
  // Read in name order: every run of "even" before any of "odd".
  registry.restore('agent:main:hook:even', files['agent:main:hook:even']!);
  registry.restore('agent:main:hook:odd', files['agent:main:hook:odd']!);
  assert.deepEqual(
    registry.restored().map((r) => r.runId),
    ['run-0'],
  );
  assert.equal(registry.get('run-0')?.status, 'queued');
  for (let n = 1; n <= 10; n++) assert.equal(registry.get(`run-${n}`), undefined, `run-${n} is among the oldest`);
  // Replies stay in the files (read back when a run is asked for): a start holds none of them.
  assert.deepEqual(registry.get('run-11'), {
    runId: 'run-11',
    name: 'agent',
    status: 'ok',
    agentId: 'main',
    sessionKey: 'agent:main:hook:odd',
  });
  assert.equal(registry.get('run-10009')?.status, 'ok');
});

test('run registry: replies kept in memory are bounded by bytes; older ones are read back from their session file', async () => {
  const reads: string[] = [];
  const registry = new RunRegistry(
    () => undefined,
    async (runId) => {
      reads.push(runId);
      return { runId, name: 'agent', status: 'ok', agentId: 'main', sessionKey: 'k', reply: `from disk ${runId}` };
    },
  );
  const reply = 'r'.repeat(256 * 1024);
  const runs = Math.ceil((2 * REPLY_BYTES_IN_MEMORY) / reply.length);
  for (let n = 0; n < runs; n++) {
    const run = { runId: `run-${n}`, name: 'agent', status: 'queued' as const, agentId: 'main', sessionKey: 'k' };
    void registry.update(run);
    void registry.update({ ...run, status: 'ok', reply });
  }
  let kept = 0;
  for (let n = 0; n < runs; n++) kept += registry.get(`run-${n}`)?.reply?.length ?? 0;
  assert.ok(kept <= REPLY_BYTES_IN_MEMORY, `${kept} bytes of replies in memory`);
  assert.ok(kept > REPLY_BYTES_IN_MEMORY / 2, 'the newest replies stay in memory');
  // The newest is served from memory; the oldest from its file.
  assert.equal((await registry.find(`run-${runs - 1}`))?.reply, reply);
  assert.deepEqual(reads, []);
  assert.equal((await registry.find('run-0'))?.reply, 'from disk run-0');
  assert.deepEqual(reads, ['run-0']);
  assert.equal(registry.get('run-0')?.status, 'ok');
  // One reply larger than the whole budget is not kept either.
  void registry.update({
    runId: 'huge',
    name: 'agent',
    status: 'ok',
    agentId: 'main',
    sessionKey: 'k',
    reply: 'h'.repeat(REPLY_BYTES_IN_MEMORY + 1),
  });
  assert.equal(registry.get('huge')?.reply, undefined);
  assert.equal((await registry.find('huge'))?.reply, 'from disk huge');
});
