// Storage past V8's string limit: a session file and an outbox of more than 600 MiB (made directly with
// fs, in large blocks) survive a restart, and history pages of such a session come back without
// holding the event loop or growing the process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Logger } from '../../plugin/host.ts';
import { SessionStore } from '../../plugin/hosts/standalone/storage/session-store.ts';
import { eventually, GATEWAY_TOKEN, MAIN, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';

const MiB = 1024 * 1024;
const BIG = 600 * MiB;

const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };

/** Writes `head`, then lines made by `line` repeated in 4 MiB blocks past `bytes`, then `tail`. */
function fillFile(file: string, head: object[], line: (i: number) => object, bytes: number, tail: object[]): void {
  const fd = openSync(file, 'w', 0o600);
  try {
    for (const r of head) writeSync(fd, JSON.stringify(r) + '\n');
    let text = '';
    for (let i = 0; text.length < 4 * MiB; i++) text += JSON.stringify(line(i)) + '\n';
    const block = Buffer.from(text);
    for (let written = 0; written < bytes; written += block.length) writeSync(fd, block);
    for (const r of tail) writeSync(fd, JSON.stringify(r) + '\n');
  } finally {
    closeSync(fd);
  }
}

const at = '2026-01-01T00:00:00.000Z';
const newest = (n: number) => ({ kind: 'system-event', text: `newest ${n}`, hook: 'wake', at });

/** A session file as the gateway wrote it before segments: one file, header first. */
async function bigSession(stateDir: string): Promise<string> {
  const dir = path.join(stateDir, 'data', 'sessions');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'agent%3amain%3amain.jsonl');
  const filler = (i: number) => ({ kind: 'system-event', text: `old ${i} ${'o'.repeat(500)}`, hook: 'wake', at });
  fillFile(file, [{ kind: 'session', key: 'agent:main:main', agentId: 'main', createdAt: at }], filler, BIG, [
    { kind: 'heartbeat', text: 'heartbeat', at },
    newest(1),
    newest(2),
    newest(3),
  ]);
  assert.ok((await stat(file)).size > BIG);
  return file;
}

async function adminGet(url: string, p: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url + p, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

test('a session file past 600 MiB: read back a page at a time in bounded time and memory, and kept by a restarted gateway', async () => {
  const stateDir = await tempStateDir();
  try {
    await bigSession(stateDir);
    const sessions = path.join(stateDir, 'data', 'sessions');

    // In this process, where the event loop and memory can be watched.
    const store = new SessionStore(sessions, quiet);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const rssBefore = process.memoryUsage().rss;
    await store.open();
    assert.deepEqual(store.takePending('agent:main:main'), ['newest 1', 'newest 2', 'newest 3']);
    const first = await store.historyPage('agent:main:main', 3);
    assert.deepEqual(
      first.entries.map((e) => e.text),
      ['newest 1', 'newest 2', 'newest 3'],
    );
    assert.ok(first.before);
    let before: string | undefined = first.before;
    let entries = 0;
    for (let i = 0; i < 40 && before; i++) {
      const page = await store.historyPage('agent:main:main', 1000, before);
      entries += page.entries.length;
      before = page.before;
    }
    delay.disable();
    const grew = process.memoryUsage().rss - rssBefore;
    assert.equal(entries, 40_000);
    // Loose bounds: reading the file whole took seconds of blocked loop and gigabytes.
    assert.ok(delay.max / 1e6 < 500, `the event loop was held for ${(delay.max / 1e6).toFixed(0)} ms`);
    assert.ok(grew < 300 * MiB, `RSS grew by ${(grew / MiB).toFixed(0)} MiB`);
    await store.close();

    // The real gateway on the same state dir.
    await writeConfig(stateDir);
    const gw = await spawnGateway(stateDir);
    try {
      const page = await adminGet(gw.url, `/api/sessions/${MAIN}/history?limit=3`);
      assert.equal(page.status, 200);
      assert.deepEqual(
        page.body.entries.map((e: any) => e.text),
        ['newest 1', 'newest 2', 'newest 3'],
      );
      assert.equal(typeof page.body.before, 'string');
      assert.equal((await gw.hook('/hooks/wake', { text: 'after the restart', mode: 'next-heartbeat' })).status, 200);
    } finally {
      await gw.stop('SIGKILL');
    }
    // Killed right after the acknowledgement: the wake and what came before are there.
    const again = await spawnGateway(stateDir);
    try {
      const texts = (await again.admin(`/api/sessions/${MAIN}/history?limit=4`)).entries.map((e: any) => e.text);
      assert.deepEqual(texts, ['newest 1', 'newest 2', 'newest 3', 'after the restart']);
    } finally {
      await again.stop();
    }
  } finally {
    await rm(stateDir, { recursive: true, force: true });
  }
});

test('an outbox past 600 MiB: the gateway starts, pages it, and still knows each agent last route', async () => {
  const stateDir = await tempStateDir();
  try {
    await mkdir(path.join(stateDir, 'data'), { recursive: true });
    const file = path.join(stateDir, 'data', 'outbox.jsonl');
    const delivery = (i: number, to: string) => ({
      channel: 'telegram',
      to,
      text: `delivery ${i} ${'d'.repeat(4000)}`,
      runId: `old-${i}`,
      agentId: 'main',
      at,
    });
    fillFile(file, [], (i) => delivery(i, 'older'), BIG, [
      delivery(-1, '777'),
      { ...delivery(-2, 'elsewhere'), agentId: 'ops' },
    ]);
    await writeConfig(stateDir);
    const gw = await spawnGateway(stateDir);
    try {
      const page = await gw.admin('/api/outbox?limit=2');
      assert.deepEqual(
        page.deliveries.map((d: any) => [d.agentId, d.to]),
        [
          ['main', '777'],
          ['ops', 'elsewhere'],
        ],
      );
      assert.equal(typeof page.before, 'string');
      // A delivery with no route of its own goes where main's last one went.
      const r = await gw.hook('/hooks/agent', { message: 'route me', name: 'CI' });
      assert.equal(r.status, 202);
      await eventually(async () => (await gw.admin(`/api/runs/${r.body.runId}`)).status === 'ok');
      const last = (await gw.admin('/api/outbox?limit=1')).deliveries;
      assert.deepEqual([last[0].runId, last[0].to], [r.body.runId, '777']);
    } finally {
      await gw.stop();
    }
  } finally {
    await rm(stateDir, { recursive: true, force: true });
  }
});
