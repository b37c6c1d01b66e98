import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile, appendFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { StateFile } from '../../../plugin/util/state-file.ts';
import type { Logger } from '../../../plugin/host.ts';

interface Rec {
  n: number;
}
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && typeof (v as Rec).n === 'number';

function logger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info() {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) };
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
