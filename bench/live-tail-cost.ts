// `node --import tsx bench/live-tail-cost.ts [<checkout>…]`: what a live tail adds to each request
// log entry, in process, where a shared machine's noise is smallest: RequestLog.add with its disk
// batch, ENTRIES entries (wake-shaped) 32 a turn, alternately without a tail and with one tail
// served by serveAdminStream to a reader over loopback; CPU from process.cpuUsage, the median of
// ROUNDS. Given several checkouts (as bench/ab.ts), each one's modules are measured in turn, round
// by round.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type ClientRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './processes.ts';

const ENTRIES = Number(process.env.ENTRIES ?? 50_000);
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const PER_TURN = 32;
const quiet = { info() {}, warn() {}, error() {} };

type Modules = {
  RequestLog: typeof import('../plugin/request-log/request-log.ts').RequestLog;
  serveAdminStream: typeof import('../plugin/admin/admin-answer.ts').serveAdminStream;
  AdminStream: typeof import('../plugin/admin/admin-call.ts').AdminStream;
  JsonText: typeof import('../plugin/admin/admin-call.ts').JsonText;
};

async function modulesOf(root: string): Promise<Modules> {
  const from = (file: string) => import(pathToFileURL(path.join(root, file)).href);
  const [log, answer, call] = await Promise.all([
    from('plugin/request-log/request-log.ts'),
    from('plugin/admin/admin-answer.ts'),
    from('plugin/admin/admin-call.ts'),
  ]);
  return {
    RequestLog: log.RequestLog,
    serveAdminStream: answer.serveAdminStream,
    AdminStream: call.AdminStream,
    JsonText: call.JsonText,
  };
}

let seq = 0;
/** A wake as the gateway logs it (request-record.ts builds the fields in this order). */
function wakeEntry() {
  const n = ++seq;
  return {
    atMs: Date.now(),
    requestId: `5f2a9c1e-8d3b-4a1f-9c2e-${n.toString(16).padStart(12, '0')}`,
    client: '127.0.0.1',
    path: '/hooks/wake',
    hook: 'wake',
    status: 200,
    ms: 0.4,
    bytes: 46,
    phases: [
      { name: 'check', ms: 0.1 },
      { name: 'receive', ms: 0.1 },
      { name: 'act', ms: 0.1 },
      { name: 'answer', ms: 0.1 },
    ],
  };
}

/** µs of CPU per entry added (its disk write included), with or without a tail open. */
async function cpuPerEntry(m: Modules, tail: boolean): Promise<number> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hookgate-live-tail-'));
  const log = await m.RequestLog.open(path.join(dir, 'requests'), quiet, () => ({
    maxEntries: 1_000_000,
    retainMs: 86_400_000,
  }));
  await log.loaded();
  let server: Server | undefined;
  let reader: ClientRequest | undefined;
  if (tail) {
    server = createServer((_req, res) => {
      void m.serveAdminStream(
        res,
        new m.AdminStream((send) => log.subscribe((live) => send('request', new m.JsonText(() => live.json)))),
      );
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => {
      reader = request(`http://127.0.0.1:${port}/`, (res) => {
        res.on('data', () => {});
        resolve();
      });
      reader.end();
    });
  }
  const before = process.cpuUsage();
  for (let added = 0; added < ENTRIES; added += PER_TURN) {
    for (let i = 0; i < PER_TURN; i++) log.add(wakeEntry() as never);
    await new Promise((resolve) => setImmediate(resolve));
  }
  await log.close();
  const used = process.cpuUsage(before);
  reader?.destroy();
  server?.closeAllConnections();
  server?.close();
  await rm(dir, { recursive: true, force: true });
  return (used.user + used.system) / ENTRIES;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const roots = process.argv.slice(2).map((p) => path.resolve(p));
if (!roots.length) roots.push(ROOT);
const sides = [];
for (const root of roots)
  sides.push({ root, m: await modulesOf(root), without: [] as number[], withTail: [] as number[] });
for (const side of sides) await cpuPerEntry(side.m, true); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const side of sides) {
    side.without.push(await cpuPerEntry(side.m, false));
    side.withTail.push(await cpuPerEntry(side.m, true));
  }
}
for (const { root, without, withTail } of sides) {
  const extra = without.map((w, i) => withTail[i]! - w);
  console.log(
    `${root}: ${median(without).toFixed(2)} µs an entry without a tail, ${median(withTail).toFixed(2)} with one; ` +
      `the tail's extra ${median(extra).toFixed(2)} µs (median of ${ROUNDS} pairs, ${Math.min(...extra).toFixed(2)} to ${Math.max(...extra).toFixed(2)})`,
  );
}
