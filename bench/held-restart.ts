// `npx tsx bench/held-restart.ts [N] [KB]`: what actions held for a paused hook cost. A real gateway
// (from source) pauses `wake` and holds N wakes of KB kilobytes each (default 200 of 250); then its
// RSS is read from /proc (VmRSS), it is killed (-9), started again on the same state dir (the time
// to listening is the restart), its RSS read again, and the hook resumed until nothing is held;
// then one more start, with nothing held, for comparison.
// docs/performance.md keeps the figures.
import { readFile } from 'node:fs/promises';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import {
  SOURCE_CLI,
  eventually,
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../test/helpers/spawn-gateway.ts';

const N = Number(process.argv[2] ?? 200);
const KB = Number(process.argv[3] ?? 250);
const SENDERS = 8;
/** Started as bin/hookgate starts it: its V8 flags and malloc setting, the CLI from source. */
const CLI = ['--max-semi-space-size=8', '--heap-growing-percent=50', ...SOURCE_CLI];
process.env.MALLOC_MMAP_THRESHOLD_ ??= '131072';
const SETTLE_S = Number(process.env.SETTLE_S ?? 0);

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

async function admin(gw: SpawnedGateway, p: string, method = 'GET'): Promise<any> {
  const res = await fetch(gw.url + p, { method, headers: { authorization: `Bearer ${GATEWAY_TOKEN}` } });
  return res.json();
}

async function held(gw: SpawnedGateway): Promise<number> {
  const { hooks } = await admin(gw, '/api/hooks');
  return hooks.find((h: { name: string }) => h.name === 'wake').held;
}

const dir = await tempStateDir();
await writeConfig(dir, { hooks: { maxBodyBytes: (KB + 16) * 1024 } });
let gw = await spawnGateway(dir, [], CLI);
await admin(gw, '/api/hooks/wake/pause', 'POST');
const rssBefore = await rssMb(gw.child.pid!);
const filler = 'x'.repeat(KB * 1024);
let next = 0;
await Promise.all(
  Array.from({ length: SENDERS }, async () => {
    while (next < N) {
      const i = next++;
      const res = await fetch(`${gw.url}/hooks/wake`, {
        method: 'POST',
        headers: { authorization: `Bearer ${HOOK_TOKEN}` },
        body: JSON.stringify({ text: `held ${i} ${filler}`, mode: 'next-heartbeat' }),
      });
      if (res.status !== 202) throw new Error(`hold ${i}: ${res.status} ${await res.text()}`);
    }
  }),
);
const rssHeld = await rssMb(gw.child.pid!);
for (let s = 1; s <= SETTLE_S; s++) {
  await new Promise((r) => setTimeout(r, 1000));
  console.log(`  ${s} s after: RSS ${(await rssMb(gw.child.pid!)).toFixed(1)} MB`);
}
await gw.stop('SIGKILL');
const fileMb = (await stat(path.join(dir, 'data', 'after', 'held.jsonl'))).size / 1024 / 1024;

const started = Date.now();
gw = await spawnGateway(dir, [], CLI);
const restartMs = Date.now() - started;
const rssRestarted = await rssMb(gw.child.pid!);
const heldAfter = await held(gw);
await admin(gw, '/api/hooks/wake/resume', 'POST');
await eventually(async () => (await held(gw)) === 0, 600_000);
const rssResumed = await rssMb(gw.child.pid!);
await gw.stop();
// The same start with nothing held: what of the restart is the held file's.
const emptyStarted = Date.now();
gw = await spawnGateway(dir, [], CLI);
const emptyMs = Date.now() - emptyStarted;
await gw.stop();

console.log(`${N} held actions of ${KB} KB (held.jsonl ${fileMb.toFixed(1)} MB, ${heldAfter} back after kill -9)`);
console.log(`RSS paused, nothing held   ${rssBefore.toFixed(1)} MB`);
console.log(`RSS after holding them     ${rssHeld.toFixed(1)} MB (+${(rssHeld - rssBefore).toFixed(1)})`);
console.log(`restart to listening       ${restartMs} ms (${emptyMs} ms with nothing held)`);
console.log(`RSS after the restart      ${rssRestarted.toFixed(1)} MB`);
console.log(`RSS after the resume       ${rssResumed.toFixed(1)} MB`);
