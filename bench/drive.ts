// Drives one side with one scenario for a while and measures it: req/s, latency percentiles, answers
// by status class, and the server's CPU time per request (read from /proc before and after).
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
}

export async function drive(
  url: string,
  pid: number,
  load: Load,
  connections: number,
  seconds: number,
): Promise<Figures> {
  const before = await cpuMicros(pid);
  const figures =
    connections === 1 ? await loneSender(url, load, seconds) : await flood(url, load, connections, seconds);
  const used = (await cpuMicros(pid)) - before;
  return { ...figures, cpuUsPerReq: figures.total ? Math.round((used / figures.total) * 10) / 10 : 0 };
}

async function flood(
  url: string,
  load: Load,
  connections: number,
  seconds: number,
): Promise<Omit<Figures, 'cpuUsPerReq'>> {
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
async function loneSender(url: string, load: Load, seconds: number): Promise<Omit<Figures, 'cpuUsPerReq'>> {
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
