// The gateway's JSON-lines logger: valid JSON whatever the values, batched, flushed on demand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, closeSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createLineLogger, fdSink, type LogSink } from '../../plugin/hosts/standalone/io/line-logger.ts';
import { tempDir } from '../helpers/temp-dir.ts';

function sink(): { out: LogSink; writes: string[] } {
  const writes: string[] = [];
  const out: LogSink = {
    write(chunk, done) {
      writes.push(String(chunk));
      done();
    },
  };
  return { out, writes };
}

test('every line is one JSON object, with hostile values escaped', () => {
  const { out, writes } = sink();
  const log = createLineLogger(out);
  log.info('hook request', {
    path: '/hooks/"x"\n{"forged":true}',
    client: 'a\\b\u0000',
    status: 200,
    ms: 1.5,
    ok: true,
    none: undefined,
    nan: Number.NaN,
  });
  log.flush();
  const lines = writes.join('').trim().split('\n');
  assert.equal(lines.length, 1);
  const parsed = JSON.parse(lines[0]!);
  assert.equal(parsed.msg, 'hook request');
  assert.equal(parsed.level, 'info');
  assert.equal(parsed.path, '/hooks/"x"\n{"forged":true}');
  assert.equal(parsed.client, 'a\\b\u0000');
  assert.equal(parsed.status, 200);
  assert.equal(parsed.ok, true);
  assert.equal(parsed.nan, null);
  assert.ok(!('none' in parsed));
  assert.match(parsed.t, /^\d{4}-\d\d-\d\dT/);
});

test('info lines are batched into one write; errors are written on the next tick', async () => {
  const { out, writes } = sink();
  const log = createLineLogger(out);
  for (let i = 0; i < 100; i++) log.info('hook request', { i });
  assert.equal(writes.length, 0, 'nothing is written synchronously');
  log.error('something broke');
  await new Promise((r) => setImmediate(r));
  assert.equal(writes.length, 1);
  assert.equal(writes[0]!.trim().split('\n').length, 101);
});

test('a sink that falls behind: the backlog is bounded, dropped lines are counted and reported', async () => {
  const writes: string[] = [];
  let release: (() => void) | undefined;
  const slow: LogSink = {
    write(chunk, done) {
      writes.push(String(chunk));
      // The first write hangs until released, as a stalled log reader would.
      if (writes.length === 1) release = () => done();
      else done();
    },
  };
  const log = createLineLogger(slow);
  const LINES = 150_000;
  const filler = 'x'.repeat(60);
  for (let i = 0; i < LINES; i++) log.info('hook request', { i, filler });
  log.flush();
  assert.equal(writes.length, 1, 'only the first batch reached the stalled sink');
  release!();
  await log.close();
  const lines = writes
    .join('')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { msg: string; dropped?: number });
  const reports = lines.filter((l) => l.msg === 'log output fell behind; lines were dropped');
  assert.equal(reports.length, 1);
  const written = lines.filter((l) => l.msg === 'hook request').length;
  assert.ok(written < LINES, 'some lines were dropped');
  const bytes = writes.reduce((n, w) => n + Buffer.byteLength(w), 0);
  assert.ok(
    bytes > 8 * 1024 * 1024 * 0.9 && bytes < 8 * 1024 * 1024 + 2 * 64 * 1024,
    `the backlog's worth was kept (${bytes} bytes)`,
  );
  assert.equal(written + reports[0]!.dropped!, LINES);
});

test('fdSink writes every batch to the descriptor; close() waits for the last one', async () => {
  const file = path.join(await tempDir('hookgate-log-'), 'out.log');
  const fd = openSync(file, 'w');
  try {
    const log = createLineLogger(fdSink(fd));
    for (let i = 0; i < 5000; i++) log.info('hook request', { i });
    log.error('last');
    await log.close();
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; i?: number });
    assert.equal(lines.length, 5001);
    assert.deepEqual(
      lines.slice(0, 5000).map((l) => l.i),
      Array.from({ length: 5000 }, (_, i) => i),
    );
    assert.equal(lines[5000]!.msg, 'last');
  } finally {
    closeSync(fd);
  }
});
