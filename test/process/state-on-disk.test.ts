// State files and held actions on the real gateway, whatever their size: a start reads a state file
// as a stream (one many times the heap starts under a small --max-old-space-size and is compacted),
// held actions stay on disk rather than in memory (RSS measured from /proc/<pid>/status), come back
// after kill -9 and resume in arrival order, and hooks.maxHeldBytes bounds the bytes held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  eventually,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  MAIN,
  SOURCE_CLI,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { assertError } from '../helpers/common.ts';

/** As bin/hookgate starts the gateway: its V8 flags and its malloc setting. */
const LAUNCHED = ['--max-semi-space-size=8', '--heap-growing-percent=50', ...SOURCE_CLI];
process.env.MALLOC_MMAP_THRESHOLD_ ??= '131072';
/** A heap the gateway starts in when its state is read as a stream, and far below the files here. */
const SMALL_HEAP = ['--max-old-space-size=32', ...SOURCE_CLI];
const MB = 1024 * 1024;

async function rssMb(gw: SpawnedGateway): Promise<number> {
  const status = await readFile(`/proc/${gw.child.pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

async function adminPost(gw: SpawnedGateway, p: string): Promise<number> {
  const res = await fetch(gw.url + p, { method: 'POST', headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  await res.body?.cancel();
  return res.status;
}

async function wake(gw: SpawnedGateway, text: string): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${gw.url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    body: JSON.stringify({ text, mode: 'next-heartbeat' }),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

async function hookState(gw: SpawnedGateway, name: string): Promise<{ paused: boolean; held: number }> {
  const { hooks } = await gw.admin('/api/hooks');
  return hooks.find((h: { name: string }) => h.name === name);
}

/** The main session's event texts, oldest first, each cut to its first words (pages of large ones). */
async function eventHeads(gw: SpawnedGateway): Promise<string[]> {
  const pages: string[][] = [];
  let before: string | undefined;
  do {
    const page = await gw.admin(
      `/api/sessions/${MAIN}/history?limit=1000${before ? `&before=${encodeURIComponent(before)}` : ''}`,
    );
    pages.unshift(
      page.entries
        .filter((e: any) => e.kind === 'system-event')
        .map((e: any) => (e.text as string).slice(0, 32).split(' ').slice(0, 2).join(' ')),
    );
    before = page.before;
  } while (before);
  return pages.flat();
}

test('a state file many times the heap is read as a stream: 64 MB of dead lines start under a 32 MB heap, then the file is compacted', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  const file = path.join(dir, 'data', 'after', 'pauses.jsonl');
  await mkdir(path.dirname(file), { recursive: true });
  // Every line replaces the one before: one live record, the rest dead bytes.
  const pad = 'p'.repeat(64 * 1024);
  const lines = Array.from({ length: 1024 }, (_, i) => `${JSON.stringify({ id: 'wake', r: { at: i, pad } })}\n`);
  await writeFile(file, lines.join(''));
  assert.ok((await stat(file)).size >= 64 * MB);
  const gw = await spawnGateway(dir, [], SMALL_HEAP);
  try {
    assert.deepEqual(await hookState(gw, 'wake'), { name: 'wake', paused: true, held: 0 });
    assert.ok((await stat(file)).size < 1 * MB, 'rewritten with the live record only');
    assert.doesNotMatch(gw.output(), /state file lines/);
  } finally {
    await gw.stop();
  }
});

test('held actions stay on disk: 400 of 250 KB grow RSS by less than half their size; after kill -9 they come back under a 32 MB heap and resume in order', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { maxBodyBytes: 300 * 1024 } });
  const filler = 'x'.repeat(250 * 1024);
  let gw = await spawnGateway(dir, [], LAUNCHED);
  const n = 400;
  try {
    assert.equal(await adminPost(gw, '/api/hooks/wake/pause'), 200);
    // A few first, so the baseline includes what any hold costs once (compiled code, buffers).
    const warm = 8;
    for (let i = 0; i < warm; i++) assert.equal((await wake(gw, `held ${i} ${filler}`)).status, 202);
    const before = await rssMb(gw);
    for (let i = warm; i < n; i++) {
      const answer = await wake(gw, `held ${i} ${filler}`);
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
    }
    const growth = (await rssMb(gw)) - before;
    const heldMb = ((n - warm) * filler.length) / MB;
    assert.ok(growth < heldMb / 2, `RSS grew ${growth.toFixed(1)} MB holding ${heldMb.toFixed(1)} MB`);
    assert.equal((await hookState(gw, 'wake')).held, n);
  } finally {
    await gw.stop('SIGKILL');
  }
  const heldFile = path.join(dir, 'data', 'after', 'held.jsonl');
  assert.ok((await stat(heldFile)).size > n * filler.length);
  gw = await spawnGateway(dir, [], SMALL_HEAP);
  try {
    assert.deepEqual(await hookState(gw, 'wake'), { name: 'wake', paused: true, held: n });
  } finally {
    await gw.stop();
  }
  gw = await spawnGateway(dir, [], LAUNCHED);
  try {
    assert.equal(await adminPost(gw, '/api/hooks/wake/resume'), 200);
    await eventually(async () => (await hookState(gw, 'wake')).held === 0, 120_000);
    const heads = await eventHeads(gw);
    assert.deepEqual(
      heads,
      Array.from({ length: n }, (_, i) => `held ${i}`),
    );
  } finally {
    await gw.stop();
  }
});

test('hooks.maxHeldBytes: an action that would pass it is refused 503 paused_full with Retry-After; a smaller one still fits', async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, { hooks: { maxBodyBytes: 400 * 1024, maxHeldBytes: MB } });
  const gw = await spawnGateway(dir);
  try {
    assert.equal(await adminPost(gw, '/api/hooks/wake/pause'), 200);
    const big = 'b'.repeat(300 * 1024);
    for (let i = 0; i < 3; i++) assert.equal((await wake(gw, `big ${i} ${big}`)).status, 202);
    const full = await wake(gw, `big 3 ${big}`);
    assertError(full, 503, 'paused_full', /hooks\.maxHeldBytes/);
    assert.match(full.headers.get('retry-after') ?? '', /^\d+$/);
    assert.equal((await hookState(gw, 'wake')).held, 3, 'nothing held for the refused one');
    assert.equal((await wake(gw, 'small')).status, 202, 'the bound is on bytes, not on the count');
    assert.equal(await adminPost(gw, '/api/hooks/wake/resume'), 200);
    await eventually(async () => (await hookState(gw, 'wake')).held === 0);
    assert.deepEqual(await eventHeads(gw), ['big 0', 'big 1', 'big 2', 'small']);
  } finally {
    await gw.stop();
  }
});
