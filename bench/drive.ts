// Drives one side with one scenario for a while and measures it: req/s, latency percentiles, answers
// by status class, and the server's CPU time per request (read from /proc before the load and once the
// server has gone quiet after it).
import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import autocannon from 'autocannon';
import { cpuMicros } from './processes.ts';

/** What is sent; `vary` changes the headers of each request (a fresh key, a fresh address). */
export interface Load {
  path: string;
  body: string;
  headers: Record<string, string>;
  vary?: (headers: Record<string, string>) => Record<string, string>;
}

export interface Figures {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Answers with a 2xx status. */
  ok: number;
  errors: number;
  /** Server CPU time (user + system, all threads) per answered request. */
  cpuUsPerReq: number;
  /**
   * The share of the machine's CPU time the hypervisor gave to others while the load ran (steal, from
   * /proc/stat): on a shared VM, figures taken with a high steal are not comparable to others.
   */
  stealPct: number;
}

export async function drive(
  url: string,
  pid: number,
  load: Load,
  connections: number,
  seconds: number,
): Promise<Figures> {
  const before = await cpuMicros(pid);
  const stealBefore = await hostTimes();
  const figures =
    connections === 1 ? await loneSender(url, load, seconds) : await flood(url, load, connections, seconds);
  // Work the load left behind (agent runs still queued, say) is the server's cost too, and must not
  // run during the next side's turn: the CPU is read once the server has gone quiet.
  const stealAfter = await hostTimes();
  const used = (await quietCpu(pid)) - before;
  const stealPct = Math.round(
    ((stealAfter.steal - stealBefore.steal) / Math.max(1, stealAfter.total - stealBefore.total)) * 100,
  );
  return { ...figures, cpuUsPerReq: figures.total ? Math.round((used / figures.total) * 10) / 10 : 0, stealPct };
}

/** The machine's CPU time so far, in all and stolen (the first line of /proc/stat, in ticks). */
export async function hostTimes(): Promise<{ total: number; steal: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user)
  const ticks = line.split(/\s+/).slice(1, 9).map(Number);
  return { total: ticks.reduce((a, b) => a + b, 0), steal: ticks[7] ?? 0 };
}

/** A server below this share of one core for QUIET_WINDOW_MS is quiet. */
const QUIET_SHARE = 0.05;
const QUIET_WINDOW_MS = 200;
/** A server still busy after this long is measured as it is, with a warning. */
const QUIET_LIMIT_MS = 60_000;

/** Waits until the process is quiet; resolves with its CPU time then. */
export async function quietCpu(pid: number): Promise<number> {
  const deadline = performance.now() + QUIET_LIMIT_MS;
  let cpu = await cpuMicros(pid);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    const now = await cpuMicros(pid);
    if (now - cpu < QUIET_WINDOW_MS * 1000 * QUIET_SHARE) return now;
    cpu = now;
    if (performance.now() > deadline) {
      console.warn(`  ! process ${pid} was still busy ${QUIET_LIMIT_MS / 1000} s after its load`);
      return now;
    }
  }
}

async function flood(
  url: string,
  load: Load,
  connections: number,
  seconds: number,
): Promise<Omit<Figures, 'cpuUsPerReq' | 'stealPct'>> {
  const vary = load.vary;
  const r = await autocannon({
    url: url + load.path,
    method: 'POST',
    headers: load.headers,
    body: load.body,
    connections,
    pipelining: 1,
    duration: seconds,
    ...(vary ? { requests: [{ setupRequest: (req) => ({ ...req, headers: vary(req.headers) }) }] } : {}),
  });
  return {
    reqPerSec: Math.round(r.requests.total / seconds),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    total: r.requests.total,
    ok: r['2xx'],
    errors: r.errors + r.timeouts,
  };
}

/**
 * One connection, one request at a time: the latency a lone sender sees. Timed here rather than by
 * autocannon, whose latency histogram has a resolution of 1 ms.
 */
async function loneSender(
  url: string,
  load: Load,
  seconds: number,
): Promise<Omit<Figures, 'cpuUsPerReq' | 'stealPct'>> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(url + load.path);
  const body = Buffer.from(load.body);
  const samples: number[] = [];
  let ok = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const headers = { ...(load.vary ? load.vary(load.headers) : load.headers), 'content-length': String(body.length) };
    const started = performance.now();
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(target, { method: 'POST', headers, agent }, (res) => {
          res.on('data', () => {});
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      });
      samples.push(performance.now() - started);
      if (status >= 200 && status < 300) ok++;
    } catch {
      errors++;
    }
  }
  agent.destroy();
  samples.sort((a, b) => a - b);
  const at = (q: number): number =>
    Math.round((samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] ?? 0) * 1000) / 1000;
  return {
    reqPerSec: Math.round(samples.length / seconds),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    total: samples.length,
    ok,
    errors,
  };
}
