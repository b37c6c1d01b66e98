// A start does not wait for the request log on disk: with 100,000 entries written beforehand, the
// real gateway answers /hooks/wake while its gauge hookgate_request_log_loading still says 1. The load
// is held under way by state, not by timing: the oldest segment is a named pipe (mkfifo) that the
// test fills only after the wake was answered, so the read cannot end before. GET /api/requests asked
// during the load waits for it; afterwards the log holds the old entries and the requests answered
// meanwhile, numbered after them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually, GATEWAY_TOKEN, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';

const OLD_ENTRIES = 100_000;
const PER_SEGMENT = 10_000;

/**
 * Segments as the gateway writes them: requests-<first seq>.jsonl, one entry a line; the oldest (read
 * first, and never by the pages asked here) is a named pipe, and its text is returned for the test to
 * write into it when it chooses.
 */
async function writeOldLog(dir: string): Promise<{ fifo: string; text: string }> {
  await mkdir(dir, { recursive: true });
  let oldest = { fifo: '', text: '' };
  const start = Date.now() - 3_600_000;
  for (let first = 1; first <= OLD_ENTRIES; first += PER_SEGMENT) {
    let text = '';
    for (let seq = first; seq < first + PER_SEGMENT; seq++) {
      text += `${JSON.stringify({
        seq,
        atMs: start + seq,
        requestId: `old-${seq}`,
        client: '127.0.0.1',
        path: '/hooks/wake',
        hook: 'wake',
        status: 200,
        ms: 1.5,
        bytes: 20,
        phases: [{ name: 'auth', ms: 0.1 }],
      })}\n`;
    }
    const file = path.join(dir, `requests-${String(first).padStart(12, '0')}.jsonl`);
    if (first === 1) oldest = { fifo: file, text };
    else await writeFile(file, text);
  }
  await promisify(execFile)('mkfifo', [oldest.fifo]);
  return oldest;
}

async function loadingGauge(url: string): Promise<number> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const m = /^hookgate_request_log_loading (\d+)$/m.exec(await res.text());
  assert.ok(m, 'the gauge is exposed');
  return Number(m[1]);
}

test('the gateway answers while its request log is still read back; both old and new entries are kept', async () => {
  const stateDir = await tempStateDir();
  await writeConfig(stateDir, { hooks: { requestLog: { maxEntries: 1_000_000, retainDays: 7 } } });
  const oldest = await writeOldLog(path.join(stateDir, 'data', 'after', 'requests'));
  const gw = await spawnGateway(stateDir);
  try {
    // Answered while the read waits on the pipe: the wake did not wait for the load.
    const wake = await gw.hook('/hooks/wake', { text: 'during the load', mode: 'next-heartbeat' });
    assert.equal(wake.status, 200);
    assert.equal(await loadingGauge(gw.url), 1, 'the load is still under way after the wake was answered');
    // Asked during the load, the list waits for it: the old entries are all there, and the wake.
    const asked = gw.admin('/api/requests?limit=3');
    await writeFile(oldest.fifo, oldest.text);
    const page = await asked;
    assert.equal(await loadingGauge(gw.url), 0);
    assert.deepEqual(page.requests.map((r: { requestId: string }) => r.requestId).slice(0, 2), [
      `old-${OLD_ENTRIES - 1}`,
      `old-${OLD_ENTRIES}`,
    ]);
    assert.equal(page.requests.length, 3);
    assert.notEqual(page.requests[2].requestId, `old-${OLD_ENTRIES}`);
    assert.equal(page.requests[2].status, 200);
    // Numbered after the old entries: its cursor pages back into them.
    const older = await gw.admin(`/api/requests?limit=1000&before=${page.before}`);
    assert.equal(older.requests.at(-1).requestId, `old-${OLD_ENTRIES - 2}`);
    // A request after the load is kept after the one answered during it.
    assert.equal((await gw.hook('/hooks/wake', { text: 'after', mode: 'next-heartbeat' })).status, 200);
    const last = await eventually(async () => {
      const p = await gw.admin('/api/requests?limit=2');
      return p.requests[0].requestId === page.requests[2].requestId && p;
    });
    assert.equal(last.requests.length, 2);
  } finally {
    await gw.stop();
  }
  // The wake answered during the load was written to disk too: a restart lists it.
  const again = await spawnGateway(stateDir);
  try {
    await writeFile(oldest.fifo, oldest.text);
    const page = await again.admin('/api/requests?limit=2');
    assert.equal(page.requests.length, 2);
    assert.ok(page.requests.every((r: { requestId: string }) => !r.requestId.startsWith('old-')));
  } finally {
    await again.stop();
  }
});
