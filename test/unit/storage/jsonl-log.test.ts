// log/jsonl-log.ts: group commit, write(), durability across instances and tail repair.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CommitRounds } from '../../../plugin/hosts/standalone/storage/log/commit-rounds.ts';
import { JsonlLog, LogResources } from '../../../plugin/hosts/standalone/storage/log/jsonl-log.ts';
import { recordingLogger, withTempDir, fileLines, type Rec } from '../../helpers/storage-fixtures.ts';

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

// This is what keeps a steady stream of appends from making a write every turn: the log writes only
// in a round, once, whatever gathered since.

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

test('group commit: after a round of many lines, the next line is written on the next turn, not after a timer', async () => {
  await withTempDir(async (dir) => {
    const log = new JsonlLog<Rec>(path.join(dir, 'log.jsonl'), recordingLogger());
    await Promise.all(Array.from({ length: 100 }, (_, n) => log.append({ n })));
    const seen: string[] = [];
    const timer = new Promise<void>((resolve) =>
      setTimeout(() => {
        seen.push('timer');
        resolve();
      }, 0),
    );
    await Promise.all([log.append({ n: 100 }).then(() => seen.push('written')), timer]);
    assert.deepEqual(seen, ['written', 'timer']);
    await log.close();
  });
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
