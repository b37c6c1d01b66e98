// The bench row "CPU of an idle gateway holding 10,000 scheduled retries": the standalone gateway (as
// `npm start` runs it) against a fake model provider that answers every request 503 with a
// Retry-After of an hour, so each accepted run fails once and waits for its next try. Its CPU time
// is read over an idle window before the runs are sent and again once all of them wait: a schedule
// with a timer per item, or one that polls, shows there.
// Run: npx tsx bench/idle-retries.ts (BENCH_RETRIES, BENCH_IDLE_SECONDS).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { quietCpu } from './drive.ts';
import { GATEWAY_TOKEN, HOOK_TOKEN, cpuMicros, rssMb, startHookgate } from './processes.ts';

const RETRIES = Number(process.env.BENCH_RETRIES ?? 10_000);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const SENDERS = 32;

/** CPU the process uses while nobody talks to it, in ms per second. */
async function idleCpuMsPerSecond(pid: number): Promise<number> {
  const before = await quietCpu(pid);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const used = (await cpuMicros(pid)) - before;
  return Math.round((used / (performance.now() - started)) * 100) / 100;
}

async function retriesScheduled(url: string): Promise<number> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  const line = (await res.text()).split('\n').find((l) => l.startsWith('hookgate_retries_total{kind="run"}'));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function main(): Promise<void> {
  const provider = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '3600' });
      res.end('{"error":{"message":"overloaded"}}');
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
  const gw = await startHookgate(
    {
      maxQueuedRuns: RETRIES * 2,
      retry: { attempts: 5, initialDelaySeconds: 3600, maxDelaySeconds: 3600 },
    },
    {},
    {
      models: { providers: { fake: { baseUrl } } },
      agents: { defaults: { model: 'fake/m' }, list: [{ id: 'main', default: true }] },
    },
  );
  try {
    const empty = await idleCpuMsPerSecond(gw.pid);
    const emptyRss = await rssMb(gw.pid);
    let next = 0;
    const send = async (): Promise<void> => {
      while (next < RETRIES) {
        next++;
        const res = await fetch(`${gw.url}/hooks/agent`, {
          method: 'POST',
          headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
          body: '{"message":"bench retry","deliver":false}',
        });
        await res.arrayBuffer();
        if (res.status !== 202) throw new Error(`the gateway answered ${res.status}`);
      }
    };
    await Promise.all(Array.from({ length: SENDERS }, send));
    const deadline = Date.now() + 600_000;
    while ((await retriesScheduled(gw.url)) < RETRIES) {
      if (Date.now() > deadline) throw new Error('the runs did not all fail once within 10 minutes');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const holding = await idleCpuMsPerSecond(gw.pid);
    const file = await stat(path.join(gw.dir, 'data', 'after', 'retries.jsonl'));
    console.log(
      `idle gateway CPU over ${IDLE_SECONDS} s: ${empty} ms/s with no retries (RSS ${emptyRss} MB), ` +
        `${holding} ms/s holding ${RETRIES} scheduled retries (RSS ${await rssMb(gw.pid)} MB, ` +
        `retries.jsonl ${Math.round(file.size / 1024)} KB)`,
    );
  } finally {
    await gw.stop();
    provider.close();
  }
}

await main();
