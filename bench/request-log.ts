// `node --expose-gc --import tsx bench/request-log.ts [N]`: what the request log on disk costs at N
// entries (default 100000, its default bound). Fills a log in a temp dir with entries shaped like a
// gateway's, then measures: an add (the request path's share), the index's heap per entry, the start
// (reading N entries back), the newest page, a page deep in the log through `before`, and a filtered
// page for a hook that has one request in a thousand. docs/performance.md keeps the figures.
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RequestLog } from '../plugin/request-log/request-log.ts';
import type { LoggedRequest } from '../plugin/request-log/entry.ts';

const N = Number(process.argv[2] ?? 100_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const quiet = { info() {}, warn() {}, error() {} };
const bounds = () => ({ maxEntries: N, retainMs: 7 * 86_400_000 });

function entry(n: number): LoggedRequest {
  const e: LoggedRequest = {
    atMs: Date.now() - N + n,
    requestId: `5f2a9c1e-${n.toString(36)}`,
    client: `203.0.113.${n % 250}`,
    path: n % 1000 === 0 ? '/hooks/rare' : '/hooks/github',
    hook: n % 1000 === 0 ? 'rare' : 'github',
    mapping: 'github',
    status: 202,
    ms: 1.3,
    bytes: 7421,
    idempotencyKey: `72d3162e-cc78-11e3-81ab-${n.toString(16).padStart(12, '0')}`,
    dedupeKey: `72d3162e-cc78-11e3-81ab-${n.toString(16).padStart(12, '0')}`,
    runIds: [`run-${n.toString(36)}-a1b2c3`],
    phases: [
      { name: 'check', ms: 0.1 },
      { name: 'receive', ms: 0.6 },
      { name: 'act', ms: 0.4 },
      { name: 'answer', ms: 0.2 },
    ],
  };
  return e;
}

async function time<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const out = await fn();
  console.log(`${what}: ${(performance.now() - t).toFixed(2)} ms`);
  return out;
}

const dir = await mkdtemp(path.join(tmpdir(), 'request-log-bench-'));
try {
  const log = await RequestLog.open(path.join(dir, 'requests'), quiet, bounds);
  const t = performance.now();
  for (let n = 1; n <= N; n++) log.add(entry(n));
  console.log(`add: ${(((performance.now() - t) * 1e6) / N).toFixed(0)} ns an entry (entry built included)`);
  await log.close();
  let bytes = 0;
  for (const f of await readdir(path.join(dir, 'requests'))) bytes += (await stat(path.join(dir, 'requests', f))).size;
  console.log(`on disk: ${(bytes / 1048576).toFixed(1)} MiB, ${(bytes / N).toFixed(0)} bytes an entry`);

  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const again = await time(`start (${N} entries read back)`, () =>
    RequestLog.open(path.join(dir, 'requests'), quiet, bounds),
  );
  gc();
  const heap = process.memoryUsage().heapUsed - heapBefore;
  console.log(`index: ${(heap / 1048576).toFixed(1)} MiB heap, ${(heap / again.size).toFixed(0)} bytes an entry`);
  const newest = await time('newest page of 100', () => again.page({}, 100));
  let cursor = Number(newest.before);
  for (let i = 0; i < 5; i++) cursor = Number((await again.page({}, 100, cursor)).before);
  await time('a page of 100 through before, deep in the log', () => again.page({}, 100, Math.floor(N / 2)));
  await time('a page of 100 of a hook with 1 request in 1000', () => again.page({ hook: 'rare' }, 100));
  await time('one request by id, the oldest', () => again.find(`5f2a9c1e-${(1).toString(36)}`));
  await again.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
