// `npx tsx bench/ab.ts <checkout> [<checkout>…]`: one row of the bench (AB_ROW, a scenario name as in
// scenarios.ts; the wake by default) against the main gateway of each build, in the same run: every
// checkout's bin/hookgate is started with the bench's main config, then the gateways are driven in
// turn, AB_ROUNDS times each for AB_SECONDS, from quiet. A lever's before and after on a shared
// machine: `git archive <before> | tar -x -C /tmp/before`, link its node_modules, and pass both trees.
import { loadavg } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { drive, quietCpu, type Figures } from './drive.ts';
import { ROOT, rssMb, startHookgate, watchRss } from './processes.ts';
import { GATEWAYS, SCENARIOS } from './scenarios.ts';

const ROW = process.env.AB_ROW ?? 'wake (next-heartbeat)';
const SECONDS = Number(process.env.AB_SECONDS ?? 10);
const ROUNDS = Number(process.env.AB_ROUNDS ?? 3);

const roots = process.argv.slice(2).map((p) => path.resolve(p));
if (!roots.length) roots.push(ROOT);
const scenario = SCENARIOS.find((s) => s.name === ROW);
if (!scenario) throw new Error(`no row named ${ROW}`);
const spec = GATEWAYS[scenario.gateway]!;

const sides = [];
for (const root of roots)
  sides.push({ root, gw: await startHookgate(spec.hooks, spec.gateway, {}, root), runs: [] as Figures[] });
const peaks = sides.map((s) => watchRss(s.gw.pid));
try {
  for (const { gw } of sides) {
    await autocannon({
      url: gw.url + scenario.load.path,
      method: 'POST',
      headers: scenario.load.headers,
      body: scenario.load.body,
      connections: scenario.connections,
      duration: 2,
    });
    await quietCpu(gw.pid);
  }
  const loads: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    loads.push(loadavg()[0]!);
    for (const side of sides)
      side.runs.push(await drive(side.gw.url, side.gw.pid, scenario.load, scenario.connections, SECONDS));
  }
  console.log(
    `${ROW}: ${ROUNDS} x ${SECONDS} s per build, alternating; load average ${loads.map((l) => l.toFixed(1)).join(', ')}`,
  );
  for (const [i, side] of sides.entries()) {
    const mean = (f: (r: Figures) => number): number => side.runs.reduce((a, r) => a + f(r), 0) / side.runs.length;
    console.log(
      `  ${side.root}: ${Math.round(mean((r) => r.reqPerSec))} req/s, CPU ${mean((r) => r.cpuUsPerReq).toFixed(1)} µs/req` +
        ` (rounds: ${side.runs.map((r) => `${r.reqPerSec}/${r.cpuUsPerReq}`).join(', ')}); RSS ${await rssMb(side.gw.pid)} MB, peak ${await peaks[i]!.stop()} MB`,
    );
  }
} finally {
  for (const { gw } of sides) await gw.stop();
}
