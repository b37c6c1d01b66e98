import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, writeFile, appendFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { StateFile } from '../../../plugin/util/state-file.ts';
import type { Logger } from '../../../plugin/host.ts';

interface Rec {
  n: number;
}
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && typeof (v as Rec).n === 'number';

function logger(): Logger & { warnings: string[]; fields: unknown[] } {
  const warnings: string[] = [];
  const fields: unknown[] = [];
  const note = (m: string, f?: unknown): void => {
    warnings.push(m);
    fields.push(f);
  };
  return { warnings, fields, info() {}, warn: note, error: note };
}

async function tempFile(): Promise<{ file: string; done(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'state-file-'));
  return { file: path.join(dir, 'sub', 'records.jsonl'), done: () => rm(dir, { recursive: true, force: true }) };
}

test('records put and removed are there after a reopen', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  await Promise.all([a.put('x', { n: 1 }), a.put('y', { n: 2 }), a.put('z', { n: 3 })]);
  await a.put('x', { n: 10 });
  await a.remove('y');
  await a.close();
  const b = await StateFile.open(file, isRec, logger());
  assert.deepEqual(
    [...b.records],
    [
      ['x', { n: 10 }],
      ['z', { n: 3 }],
    ],
  );
  await b.close();
  await done();
});

test('a torn last line and lines of another shape are dropped, with one warning', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  await a.put('kept', { n: 1 });
  await a.close();
  await appendFile(file, `${JSON.stringify({ id: 'odd', r: { n: 'no' } })}\n{"id":"torn","r":{"n`);
  const log = logger();
  const b = await StateFile.open(file, isRec, log);
  assert.deepEqual([...b.records.keys()], ['kept']);
  assert.equal(log.warnings.length, 1);
  // The rewrite at open leaves only the live record.
  assert.equal((await readFile(file, 'utf8')).trim().split('\n').length, 1);
  await b.put('next', { n: 2 });
  await b.close();
  const c = await StateFile.open(file, isRec, logger());
  assert.deepEqual([...c.records.keys()], ['kept', 'next']);
  await c.close();
  await done();
});

test('the file is rewritten with the live records once dead lines outweigh them', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  for (let i = 0; i < 3000; i++) await a.put('same', { n: i });
  await a.close();
  const lines = (await readFile(file, 'utf8')).trim().split('\n').length;
  assert.ok(lines <= 1100, `lines: ${lines}`);
  const b = await StateFile.open(file, isRec, logger());
  assert.deepEqual(b.get('same'), { n: 2999 });
  await b.close();
  await done();
});

test('without a path the records live in memory and writes resolve at once', async () => {
  const a = await StateFile.open(undefined, isRec, logger());
  await a.put('m', { n: 1 });
  assert.equal(a.size, 1);
  await a.remove('m');
  assert.equal(a.size, 0);
  await a.close();
});

test('a write that cannot reach the disk rejects its callers and is logged without the record', async () => {
  const { file, done } = await tempFile();
  const log = logger();
  const a = await StateFile.open(file, isRec, log);
  await rm(path.dirname(file), { recursive: true });
  await writeFile(path.dirname(file), 'not a directory');
  await assert.rejects(a.put('secret-id', { n: 1 }));
  assert.equal(log.warnings.length, 1);
  assert.ok(!log.warnings[0]!.includes('secret-id'));
  await a.close();
  await done();
});

test('a line longer than the bound is skipped unread with one warning naming the file; the rest loads', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  await a.put('before', { n: 1 });
  await a.close();
  const huge = JSON.stringify({ id: 'huge', r: { n: 2, pad: 'h'.repeat(300 * 1024) } });
  await appendFile(file, `${huge}\n${JSON.stringify({ id: 'after', r: { n: 3 } })}\n`);
  const log = logger();
  const b = await StateFile.open(file, isRec, log, { maxLineBytes: 64 * 1024 });
  assert.deepEqual([...b.records.keys()], ['before', 'after']);
  assert.equal(log.warnings.length, 1);
  assert.match(log.warnings[0]!, /too long/);
  assert.deepEqual(log.fields[0], { file, count: 1, maxLineBytes: 64 * 1024 });
  // The rewrite at open leaves it out.
  assert.ok((await stat(file)).size < 1024);
  await b.close();
  await done();
});

test('dead bytes outweighing the live ones rewrite the file, even with few lines', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  await a.put('big', { n: 1, pad: 'b'.repeat(3 * 1024 * 1024) } as Rec);
  await a.put('big', { n: 2 });
  assert.ok((await stat(file)).size < 1024, 'two lines, one of them 3 MB and dead: rewritten');
  await a.close();
  const b = await StateFile.open(file, isRec, logger());
  assert.deepEqual([...b.records], [['big', { n: 2 }]]);
  await b.close();
  await done();
});

test('a summarized store keeps only summaries in memory and reads each record back from disk, across rewrites and a reopen', async () => {
  const { file, done } = await tempFile();
  interface Big extends Rec {
    pad: string;
  }
  const isBig = (v: unknown): v is Big => isRec(v) && typeof (v as Big).pad === 'string';
  const options = { summarize: (r: Big, bytes: number) => ({ n: r.n, bytes }) };
  const big = (n: number): Big => ({ n, pad: String(n).repeat(300 * 1024 + n * 7919) });
  const a = await StateFile.open(file, isBig, logger(), options);
  // Lines of 300 to 700 KB: some straddle the reader's chunks.
  await Promise.all(Array.from({ length: 50 }, (_, n) => a.put(`r${n}`, big(n))));
  assert.deepEqual(a.get('r3'), { n: 3, bytes: Buffer.byteLength(`${JSON.stringify({ id: 'r3', r: big(3) })}\n`) });
  assert.deepEqual(await a.read('r7'), big(7));
  // Removing most of them makes dead bytes outweigh the live ones: the file is rewritten.
  const sizeBefore = (await stat(file)).size;
  await Promise.all(Array.from({ length: 45 }, (_, n) => a.remove(`r${n}`)));
  await a.put('r49', big(49));
  assert.ok((await stat(file)).size < sizeBefore / 4, 'rewritten');
  for (const n of [45, 46, 47, 48, 49]) assert.deepEqual(await a.read(`r${n}`), big(n));
  assert.equal(await a.read('r1'), undefined);
  await a.close();
  const b = await StateFile.open(file, isBig, logger(), options);
  assert.deepEqual([...b.records.keys()], ['r45', 'r46', 'r47', 'r48', 'r49']);
  assert.equal(b.get('r46')?.n, 46);
  assert.deepEqual(await b.read('r48'), big(48));
  await b.close();
  await done();
});

test('a torn tail alone is cut off at open, the file kept in place rather than copied', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  await a.put('kept', { n: 1 });
  await a.close();
  await appendFile(file, '{"id":"torn","r":{"n');
  const inode = (await stat(file)).ino;
  const log = logger();
  const b = await StateFile.open(file, isRec, log);
  assert.deepEqual([...b.records.keys()], ['kept']);
  assert.equal(log.warnings.length, 1);
  assert.equal((await stat(file)).ino, inode);
  assert.equal(await readFile(file, 'utf8'), `${JSON.stringify({ id: 'kept', r: { n: 1 } })}\n`);
  await b.put('next', { n: 2 });
  await b.close();
  const c = await StateFile.open(file, isRec, logger());
  assert.deepEqual([...c.records.keys()], ['kept', 'next']);
  await c.close();
  await done();
});

test('a file holding more live records than the store keeps is trimmed oldest first as it is read, with one warning', async () => {
  const { file, done } = await tempFile();
  await mkdir(path.dirname(file), { recursive: true });
  const lines = Array.from({ length: 10 }, (_, n) => `${JSON.stringify({ id: `r${n}`, r: { n } })}\n`);
  await writeFile(file, lines.join(''));
  const log = logger();
  const a = await StateFile.open(file, isRec, log, { keepAtMost: { records: 3, bytes: 1e9 } });
  assert.deepEqual([...a.records.keys()], ['r7', 'r8', 'r9']);
  assert.equal(log.warnings.length, 1);
  assert.deepEqual(log.fields[0], { file, count: 7 });
  await a.close();
  // By bytes too: each line is 24 bytes, so 50 bytes keep two.
  const b = await StateFile.open(file, isRec, logger(), { keepAtMost: { records: 100, bytes: 50 } });
  assert.deepEqual([...b.records.keys()], ['r8', 'r9']);
  await b.close();
  await done();
});

test('putSoon: the puts of one id while a write is under way make one line, encoded once, the latest record', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  let encoded = 0;
  const put = (n: number): Promise<void> =>
    a.putSoon('x', {
      get n() {
        encoded++;
        return n;
      },
    } as Rec);
  const first = Array.from({ length: 50 }, (_, i) => put(i));
  assert.equal(a.get('x')!.n, 49, 'memory has the latest at once');
  await Promise.resolve();
  // The first batch is being written now: these gather into the next.
  const second = Array.from({ length: 50 }, (_, i) => put(50 + i));
  await Promise.all([...first, ...second]);
  const lines = (await readFile(file, 'utf8')).trim().split('\n');
  assert.deepEqual(
    lines.map((l) => JSON.parse(l)),
    [
      { id: 'x', r: { n: 49 } },
      { id: 'x', r: { n: 99 } },
    ],
  );
  // One encoding per line, plus the read above.
  assert.equal(encoded, 2 + 1);
  assert.equal(a.get('x')!.n, 99);
  await a.close();
  await done();
});

test('putSoon keeps the order of a removal between puts of the same id in one batch', async () => {
  const { file, done } = await tempFile();
  const a = await StateFile.open(file, isRec, logger());
  await Promise.all([a.putSoon('x', { n: 1 }), a.remove('x'), a.putSoon('x', { n: 2 }), a.putSoon('x', { n: 3 })]);
  await Promise.all([a.putSoon('y', { n: 1 }), a.putSoon('y', { n: 2 }), a.remove('y')]);
  await a.close();
  const lines = (await readFile(file, 'utf8')).trim().split('\n');
  assert.equal(lines.length, 5, lines.join('\n'));
  const b = await StateFile.open(file, isRec, logger());
  assert.deepEqual([...b.records], [['x', { n: 3 }]]);
  await b.close();
  await done();
});
