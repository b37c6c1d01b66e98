// The request log on its own: bounds (entries and age), filters and `before` paging over the index,
// entries on disk read back by a new instance, segments deleted as their entries leave, a failed write
// logged once with nothing lost from memory, what of a sender's key it keeps, and the live tail's
// entries (serialized once, their disk lines made from the same text) and filter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, open, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { entryOf, LOGGED_KEY_MAX, loggableKey, type LoggedRequest } from '../../plugin/request-log/entry.ts';
import { liveMatches, LiveEntry, RequestLog, type RequestLogBounds } from '../../plugin/request-log/request-log.ts';
import { waitUntil } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import type { Logger } from '../../plugin/host.ts';

const DAY = 86_400_000;
const NOW = Date.now();

function entry(n: number, extra: Partial<LoggedRequest> = {}): LoggedRequest {
  return {
    atMs: NOW - 1000 + n,
    requestId: `r${n}`,
    client: '127.0.0.1',
    path: '/hooks/wake',
    hook: 'wake',
    status: 200,
    ms: 1,
    bytes: 2,
    ...extra,
  };
}

function recorder(): Logger & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  return {
    lines,
    info: (msg) => lines.push({ level: 'info', msg }),
    warn: (msg) => lines.push({ level: 'warn', msg }),
    error: (msg) => lines.push({ level: 'error', msg }),
  };
}

const bounds =
  (maxEntries: number, retainMs = 7 * DAY): (() => RequestLogBounds) =>
  () => ({ maxEntries, retainMs });

const ids = (page: { requests: { requestId: string }[] }): string[] => page.requests.map((r) => r.requestId);

test('the newest maxEntries are kept; pages are newest first in pages, oldest first within one', async () => {
  const log = await RequestLog.open(undefined, recorder(), bounds(5));
  for (let n = 1; n <= 8; n++) log.add(entry(n));
  assert.equal(log.size, 5);
  const first = await log.page({}, 2);
  assert.deepEqual(ids(first), ['r7', 'r8']);
  assert.ok(first.before);
  const second = await log.page({}, 2, Number(first.before));
  assert.deepEqual(ids(second), ['r5', 'r6']);
  const last = await log.page({}, 2, Number(second.before));
  assert.deepEqual(ids(last), ['r4']);
  assert.equal(last.before, undefined, 'nothing older');
});

test('filters: hook, outcome class, code, client and time range, each on its own', async () => {
  const log = await RequestLog.open(undefined, recorder(), bounds(100));
  log.add(entry(1, { hook: 'github', mapping: 'github', status: 202 }));
  log.add(entry(2, { status: 401, code: 'unauthorized', client: '10.0.0.9' }));
  log.add(entry(3, { status: 200, duplicate: true }));
  log.add(entry(4, { status: 202, held: true, hook: 'github' }));
  log.add(entry(5, { status: 200, ignored: true }));
  log.add(entry(6, { status: 503, code: 'queue_full' }));
  assert.deepEqual(ids(await log.page({ hook: 'github' }, 10)), ['r1', 'r4']);
  assert.deepEqual(ids(await log.page({ outcome: '2xx' }, 10)), ['r1']);
  assert.deepEqual(ids(await log.page({ outcome: '4xx' }, 10)), ['r2']);
  assert.deepEqual(ids(await log.page({ outcome: '5xx' }, 10)), ['r6']);
  assert.deepEqual(ids(await log.page({ outcome: 'duplicate' }, 10)), ['r3']);
  assert.deepEqual(ids(await log.page({ outcome: 'held' }, 10)), ['r4']);
  assert.deepEqual(ids(await log.page({ outcome: 'ignored' }, 10)), ['r5']);
  assert.deepEqual(ids(await log.page({ code: 'queue_full' }, 10)), ['r6']);
  assert.deepEqual(ids(await log.page({ client: '10.0.0.9' }, 10)), ['r2']);
  assert.deepEqual(ids(await log.page({ sinceMs: NOW - 1000 + 3, untilMs: NOW - 1000 + 5 }, 10)), ['r3', 'r4']);
  // A filtered page's cursor skips what does not match.
  const page = await log.page({ hook: 'wake' }, 2);
  assert.deepEqual(ids(page), ['r5', 'r6']);
  assert.deepEqual(ids(await log.page({ hook: 'wake' }, 2, Number(page.before))), ['r2', 'r3']);
  assert.equal((await log.find('r4'))?.held, true);
  assert.equal(await log.find('nope'), undefined);
});

test('entries older than retainDays leave the log', async () => {
  const log = await RequestLog.open(undefined, recorder(), bounds(100, DAY));
  log.add(entry(1, { atMs: NOW - 2 * DAY }));
  log.add(entry(2));
  assert.deepEqual(ids(await log.page({}, 10)), ['r2']);
});

test('on disk: a new instance reads the entries back, in order, with their cursor', async () => {
  const dir = path.join(await tempDir('request-log-'), 'requests');
  const first = await RequestLog.open(dir, recorder(), bounds(1000));
  for (let n = 1; n <= 300; n++) first.add(entry(n, { runIds: [`run-${n}`], dedupeKey: `k${n}` }));
  await first.close();
  const again = await RequestLog.open(dir, recorder(), bounds(1000));
  await again.loaded();
  assert.equal(again.size, 300);
  const page = await again.page({}, 3);
  assert.deepEqual(ids(page), ['r298', 'r299', 'r300']);
  assert.deepEqual((await again.page({}, 1, Number(page.before))).requests[0]?.runIds, ['run-297']);
  again.add(entry(301));
  await waitUntil(async () => (await again.page({}, 1)).requests[0]?.requestId === 'r301', 'the new one');
  await again.close();
  const third = await RequestLog.open(dir, recorder(), bounds(1000));
  assert.deepEqual(ids(await third.page({}, 2)), ['r300', 'r301'], 'numbering goes on after a restart');
  await third.close();
});

test('on disk: entries added while the files are read back are kept after them, pages waiting for the read', async () => {
  const dir = path.join(await tempDir('request-log-'), 'requests');
  const first = await RequestLog.open(dir, recorder(), bounds(1000));
  for (let n = 1; n <= 300; n++) first.add(entry(n));
  await first.close();
  const again = await RequestLog.open(dir, recorder(), bounds(1000));
  assert.equal(again.loading, true, 'open resolves before the entries are read');
  const seen: string[] = [];
  again.subscribe((e) => seen.push(e.logged.requestId));
  again.add(entry(301));
  assert.deepEqual(seen, ['r301'], 'the live tail has it at once');
  const page = await again.page({}, 3);
  assert.equal(again.loading, false);
  assert.deepEqual(ids(page), ['r299', 'r300', 'r301']);
  await again.close();
  const third = await RequestLog.open(dir, recorder(), bounds(1000));
  assert.deepEqual(ids(await third.page({}, 2)), ['r300', 'r301'], 'written to disk after the read');
  await third.close();
});

test('with a live tail open each entry is serialized once: the tail gets it, and its disk line reads back the same', async () => {
  const dir = path.join(await tempDir('request-log-'), 'requests');
  const log = await RequestLog.open(dir, recorder(), bounds(1000));
  await log.loaded();
  const sent: string[] = [];
  const stop = log.subscribe((live) => sent.push(live.json));
  const odd = {
    reason: 'a "quoted" \u2028 line\nbreak and ünïcode ✓',
    runIds: ['run-1'],
    phases: [{ name: 'check', ms: 0.1 }],
  };
  log.add(entry(1, odd));
  log.add(entry(2, { status: 401, code: 'unauthorized' }));
  stop();
  log.add(entry(3));
  assert.equal(sent.length, 2);
  // The very text the API's pages make, field for field.
  assert.equal(sent[0], JSON.stringify(entryOf(entry(1, odd))));
  assert.equal(sent[1], JSON.stringify(entryOf(entry(2, { status: 401, code: 'unauthorized' }))));
  await log.close();
  const again = await RequestLog.open(dir, recorder(), bounds(1000));
  const page = await again.page({}, 10);
  assert.deepEqual(page.requests, [
    entryOf(entry(1, odd)),
    entryOf(entry(2, { status: 401, code: 'unauthorized' })),
    entryOf(entry(3)),
  ]);
  assert.deepEqual(ids(await again.page({ outcome: '4xx' }, 10)), ['r2']);
  await again.close();
});

test("an entry's live texts: the API's JSON and the disk line's from one serialization, whatever its field order", () => {
  const first = entry(7, { code: 'unauthorized', phases: [{ name: 'check', ms: 0.1 }] });
  const live = new LiveEntry(first);
  assert.equal(live.json, JSON.stringify(entryOf(first)));
  assert.equal(live.raw, JSON.stringify(first));
  assert.equal(
    `{"seq":9,${live.raw.slice(1)}`,
    JSON.stringify({ seq: 9, ...first }),
    'the disk line as the writer makes it',
  );
  // An entry whose time is not its first field (read back, or built elsewhere): still the API's
  // JSON.
  const { atMs, ...rest } = first;
  const reordered = { ...rest, atMs } as LoggedRequest;
  assert.equal(new LiveEntry(reordered).json, JSON.stringify(entryOf(reordered)));
});

test('the live tail filters new entries as the pages do; no filter passes all', () => {
  const refused = entry(1, { status: 401, code: 'unauthorized', hook: 'github' });
  assert.equal(liveMatches(refused, {}), true);
  assert.equal(liveMatches(refused, { outcome: '4xx', hook: 'github' }), true);
  assert.equal(liveMatches(refused, { outcome: '2xx' }), false);
  assert.equal(liveMatches(refused, { code: 'unauthorized', client: '127.0.0.1' }), true);
  assert.equal(liveMatches(refused, { sinceMs: refused.atMs + 1 }), false);
  assert.equal(liveMatches(entry(2, { duplicate: true }), { outcome: 'duplicate' }), true);
});

test('on disk: the bound holds across a restart, and segments whose entries all left are deleted', async () => {
  const dir = path.join(await tempDir('request-log-'), 'requests');
  // maxEntries 100: segments of 64 entries.
  const log = await RequestLog.open(dir, recorder(), bounds(100));
  for (let n = 1; n <= 1000; n++) log.add(entry(n));
  await log.close();
  const files = (await readdir(dir)).filter((f) => f.endsWith('.jsonl'));
  assert.ok(files.length <= 3, `old segments deleted: ${files.join(', ')}`);
  const smaller = await RequestLog.open(dir, recorder(), bounds(10));
  await smaller.loaded();
  assert.equal(smaller.size, 10, 'a smaller bound at start trims what was kept');
  assert.deepEqual(ids(await smaller.page({}, 1)), ['r1000']);
  await smaller.close();
});

test('on disk: a torn last line and a foreign line are skipped with one warning', async () => {
  const dir = path.join(await tempDir('request-log-'), 'requests');
  const log = await RequestLog.open(dir, recorder(), bounds(100));
  log.add(entry(1));
  log.add(entry(2));
  await log.close();
  const [file] = (await readdir(dir)).filter((f) => f.endsWith('.jsonl'));
  await appendFile(path.join(dir, file!), 'not json\n{"seq":9,"atMs":1');
  const logger = recorder();
  const again = await RequestLog.open(dir, logger, bounds(100));
  assert.deepEqual(ids(await again.page({}, 10)), ['r1', 'r2']);
  assert.deepEqual(
    logger.lines.filter((l) => l.level === 'warn').map((l) => l.msg),
    ['request log lines unreadable, skipped'],
  );
  await again.close();
});

test('a write that fails is logged once; its entries stay readable from memory and nothing throws', async () => {
  const dir = path.join(await tempDir('request-log-'), 'requests');
  const logger = recorder();
  const log = await RequestLog.open(dir, logger, bounds(100));
  // Its folder removed under it: a segment cannot be created.
  await rm(dir, { recursive: true });
  log.add(entry(1));
  await waitUntil(() => logger.lines.some((l) => l.level === 'error'), 'the failure logged');
  log.add(entry(2));
  log.add(entry(3));
  assert.deepEqual(ids(await log.page({}, 10)), ['r1', 'r2', 'r3']);
  assert.equal(logger.lines.filter((l) => l.level === 'error').length, 1);
});

test('entries added turn after turn are written in batches, not one write a turn', async () => {
  const dir = path.join(await tempDir('request-log-'), 'requests');
  // Segments of 1,250 entries: the whole test's in one file.
  const log = await RequestLog.open(dir, recorder(), bounds(10_000));
  // Every write on a file handle in this process, counted (only the log writes here).
  const probe = await open(path.join(dir, 'probe'), 'w');
  const handles = Object.getPrototypeOf(probe) as { write: (...args: unknown[]) => Promise<unknown> };
  await probe.close();
  const write = handles.write;
  let writes = 0;
  handles.write = function (this: unknown, ...args: unknown[]) {
    writes++;
    return write.apply(this, args);
  };
  try {
    const started = performance.now();
    for (let n = 1; n <= 200; n++) {
      log.add(entry(n));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const elapsedMs = performance.now() - started;
    await log.close();
    const lines = (
      await readFile(
        path.join(
          dir,
          (await readdir(dir)).find((f) => f.endsWith('.jsonl'))!,
        ),
        'utf8',
      )
    )
      .trim()
      .split('\n');
    assert.equal(lines.length, 200, 'every entry written');
    // One batch per 100 ms at most, and the one close() writes: 200 turns are far fewer batches.
    assert.ok(
      writes <= Math.ceil(elapsedMs / 100) + 2,
      `${writes} writes for 200 turns in ${Math.round(elapsedMs)} ms`,
    );
  } finally {
    handles.write = write;
  }
});

test('a sender-chosen key loses its control characters and is capped', () => {
  assert.equal(loggableKey('a\u0000b\u001b[31mc\u007f\u2028d'), 'ab[31mcd');
  const long = loggableKey('x'.repeat(500));
  assert.equal(long, `${'x'.repeat(LOGGED_KEY_MAX)}…`);
  assert.equal(loggableKey('delivery-42'), 'delivery-42');
});
