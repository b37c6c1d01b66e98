// The gateway's JSON-lines logger: valid JSON whatever the values, batched, flushed on demand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLineLogger } from '../plugin/hosts/standalone/logger.ts';

function sink(): { out: Writable; writes: string[] } {
  const writes: string[] = [];
  const out = new Writable({
    write(chunk, _enc, cb) {
      writes.push(String(chunk));
      cb();
    },
  });
  return { out, writes };
}

test('every line is one JSON object, with hostile values escaped', () => {
  const { out, writes } = sink();
  const log = createLineLogger(out);
  log.info('hook request', { path: '/hooks/"x"\n{"forged":true}', client: 'a\\b\u0000', status: 200, ms: 1.5, ok: true, none: undefined, nan: Number.NaN });
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
