// `npx tsx bench/memory-profile.ts`: where the gateway's resident memory goes. One gateway with the
// bench's main config is driven through the rows that move its memory (PROFILE_ROWS, names as in
// scenarios.ts, `|`-separated; PROFILE_SECONDS each), then left idle as long as the bench leaves it.
// PROFILE_ROWS=bench drives every row the bench's main gateway serves, in the bench's order.
// After each step: the peak RSS while it ran, and the RSS split by /proc/<pid>/smaps into file-backed pages (the node binary, mapped
// files), the brk heap (glibc's main arena) and other anonymous memory (V8's heap pages, thread
// stacks, malloc's other arenas and mmapped blocks); then V8's own figures of the main isolate (heap
// committed by space, external memory), from a probe preloaded into the gateway. At the end a heap snapshot of the idle gateway
// (written on SIGUSR2, read, summarised and deleted): the live JavaScript heap by kind and by the
// constructors that hold the most. Extra environment for the gateway (MALLOC_ARENA_MAX=2, say) is
// taken from this process's. docs/performance.md keeps the figures.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { drive } from './drive.ts';
import { GATEWAYS, SCENARIOS } from './scenarios.ts';
import { ROOT, rssMb, startHookgate, watchRss } from './processes.ts';

const SECONDS = Number(process.env.PROFILE_SECONDS ?? 5);
const ROWS =
  process.env.PROFILE_ROWS === 'bench'
    ? SCENARIOS.filter((s) => s.gateway === 'main' || s.variants?.includes('main')).map((s) => s.name)
    : (
        process.env.PROFILE_ROWS ??
        'wake (next-heartbeat)|mapped hook + transform|wake with a fresh Idempotency-Key each|200 KB body (wake)'
      ).split('|');
/** As the bench: past the transform workers' idle retirement (60 s). */
const SETTLE_MS = Number(process.env.PROFILE_SETTLE_MS ?? 65_000);
const MB = 1024 * 1024;

/** Resident kB by kind of mapping. */
async function smaps(pid: number): Promise<{ file: number; brk: number; anon: number }> {
  const text = await readFile(`/proc/${pid}/smaps`, 'utf8');
  const sums = { file: 0, brk: 0, anon: 0 };
  let kind: keyof typeof sums = 'anon';
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const name = head[2]!;
      kind = name === '[heap]' ? 'brk' : head[1] !== '0' && name.startsWith('/') ? 'file' : 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) sums[kind] += Number(rss[1]);
  }
  return sums;
}

async function report(label: string, pid: number, peakMb?: number): Promise<void> {
  const s = await smaps(pid);
  const mb = (kb: number): string => (kb / 1024).toFixed(1);
  console.log(
    `${label.padEnd(44)} RSS ${(await rssMb(pid)).toFixed(1).padStart(6)} MB: file ${mb(s.file)}, brk heap ${mb(s.brk)}, other anonymous ${mb(s.anon)}${peakMb ? `; peak ${peakMb} MB` : ''}`,
  );
  console.log(`${''.padEnd(44)} ${await v8Figures(pid)}`);
}

/** Preloaded into the gateway (main thread only): V8's figures written to a file on SIGWINCH. */
const PROBE = `const { isMainThread } = require('node:worker_threads');
if (isMainThread) process.on('SIGWINCH', () => {
  const v8 = require('node:v8');
  const figures = { usage: process.memoryUsage(), spaces: v8.getHeapSpaceStatistics() };
  require('node:fs').writeFileSync(process.env.HEAP_PROBE_OUT + '.tmp', JSON.stringify(figures));
  require('node:fs').renameSync(process.env.HEAP_PROBE_OUT + '.tmp', process.env.HEAP_PROBE_OUT);
});
`;
const probeDir = await mkdtemp(path.join(tmpdir(), 'hookgate-probe-'));
const probeOut = path.join(probeDir, 'figures.json');

interface Figures {
  usage: NodeJS.MemoryUsage;
  spaces: { space_name: string; space_size: number; space_used_size: number }[];
}

/** The main isolate's heap committed and used by space, and its external memory, as one line. */
async function v8Figures(pid: number): Promise<string> {
  await rm(probeOut, { force: true });
  process.kill(pid, 'SIGWINCH');
  for (let waited = 0; waited < 5000; waited += 50) {
    await new Promise((r) => setTimeout(r, 50));
    let figures: Figures;
    try {
      figures = JSON.parse(await readFile(probeOut, 'utf8')) as Figures;
    } catch {
      continue;
    }
    const mb = (n: number): string => (n / MB).toFixed(1);
    const { usage } = figures;
    const spaces = figures.spaces
      .filter((sp) => sp.space_size > 0)
      .map((sp) => `${sp.space_name.replace(/_space$/, '')} ${mb(sp.space_size)}/${mb(sp.space_used_size)}`)
      .join(', ');
    return `V8 heap ${mb(usage.heapTotal)} MB (used ${mb(usage.heapUsed)}), external ${mb(usage.external)} (array buffers ${mb(usage.arrayBuffers)}); by space, committed/used: ${spaces}`;
  }
  return 'V8 figures: no answer from the probe';
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** The live heap by node kind, and the constructors (or kinds of string, code...) holding the most. */
function summarise(snap: Snapshot): void {
  const fields = snap.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = snap.snapshot.meta.node_types[0];
  const byType = new Map<string, number>();
  const byName = new Map<string, { size: number; count: number }>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!]!;
    const size = snap.nodes[i + sizeAt]!;
    total += size;
    byType.set(type, (byType.get(type) ?? 0) + size);
    const name = type === 'object' || type === 'closure' ? `${type} ${snap.strings[snap.nodes[i + nameAt]!]}` : type;
    const entry = byName.get(name) ?? { size: 0, count: 0 };
    entry.size += size;
    entry.count += 1;
    byName.set(name, entry);
  }
  console.log(`\nheap snapshot of the idle gateway: ${(total / MB).toFixed(1)} MB live`);
  for (const [type, size] of [...byType].sort((a, b) => b[1] - a[1]).slice(0, 8)) {
    console.log(`  ${type.padEnd(40)} ${(size / MB).toFixed(1).padStart(6)} MB`);
  }
  console.log('largest holders:');
  for (const [name, { size, count }] of [...byName].sort((a, b) => b[1].size - a[1].size).slice(0, 15)) {
    console.log(`  ${name.slice(0, 40).padEnd(40)} ${(size / MB).toFixed(1).padStart(6)} MB in ${count}`);
  }
}

async function heapSnapshot(pid: number): Promise<void> {
  const before = new Set(await readdir(ROOT));
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; waited < 120_000; waited += 500) {
    await new Promise((r) => setTimeout(r, 500));
    const made = (await readdir(ROOT)).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!made) continue;
    const file = path.join(ROOT, made);
    // Written in pieces: it is whole once it parses.
    try {
      summarise(JSON.parse(await readFile(file, 'utf8')) as Snapshot);
      await rm(file, { force: true });
      return;
    } catch {
      continue;
    }
  }
  throw new Error('no heap snapshot appeared');
}

await writeFile(path.join(probeDir, 'probe.cjs'), PROBE);
process.env.HEAP_PROBE_OUT = probeOut;
process.env.NODE_OPTIONS =
  `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --require ${path.join(probeDir, 'probe.cjs')}`.trim();
const gateway = await startHookgate(GATEWAYS.main!.hooks, GATEWAYS.main!.gateway);
try {
  await report('started', gateway.pid);
  for (const name of ROWS) {
    const scenario = SCENARIOS.find((s) => s.name === name);
    if (!scenario) throw new Error(`no scenario named ${JSON.stringify(name)}`);
    const peak = watchRss(gateway.pid);
    const figures = await drive(gateway.url, gateway.pid, scenario.load, scenario.connections, SECONDS);
    await report(`after ${name} (${figures.total} requests)`, gateway.pid, await peak.stop());
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  await report(`after ${SETTLE_MS / 1000} s idle`, gateway.pid);
  await heapSnapshot(gateway.pid);
} finally {
  await gateway.stop();
  await rm(probeDir, { recursive: true, force: true });
}
