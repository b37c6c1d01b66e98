// `npm run bench`: the standalone gateway against a bare node:http server in the same run, each in
// its own process, driven alternately (autocannon; one connection: a sequential sender timed here).
// Per scenario and side: req/s, p50/p99 latency and the server's CPU time per request; the ratios to
// bare; hookgate's RSS. BENCH_PEERS=openclaw adds two OpenClaw gateways on the same config: one with
// the hookgate plugin enabled, whose plugin and built-in hooks are both driven (inside OpenClaw, side
// by side), and one with it disabled (OpenClaw's built-in hooks alone, and the RSS without the plugin).
// Every figure goes to bench/results/latest.json.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { AGENT_RUNS_ROW, agentRunsAgainstModel, type BackHalfRow } from './back-half.ts';
import { BACKLOG_ROW, QUEUE_ROW, queueRows } from './door-queue.ts';
import { drive, quietCpu, type Figures, type Load } from './drive.ts';
import { PLUGIN_PATH, lockAddress, startOpenClaw, type OpenClawSide } from './openclaw-peer.ts';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  ROOT,
  gatewayConfig,
  rssMb,
  startBare,
  startHookgate,
  watchRss,
  type Side,
} from './processes.ts';
import { GATEWAYS, LOCKED_ADDRESS, SCENARIOS, type Scenario } from './scenarios.ts';
import { benchDeliveries } from './deliveries.ts';
import { openTail, tailPairs } from './tail-pairs.ts';
import { startRedis } from '../test/helpers/redis-server.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Sides alternate this many times per scenario; figures are the means (this VM is noisy). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/**
 * Runs only the scenarios whose name contains this text (e.g. BENCH_ONLY=429), or any of several
 * separated by `|` (BENCH_ONLY='mapped hook + template|three conditions'); all by default.
 */
const ONLY = (process.env.BENCH_ONLY ?? '').split('|');
const wanted = (name: string): boolean => ONLY.some((part) => name.includes(part));
/** Pairs of phases, without and with a live tail, for a row with a tail variant (tail-pairs.ts). */
const TAIL_PAIRS = Number(process.env.BENCH_TAIL_PAIRS ?? 6);
const PEERS = (process.env.BENCH_PEERS ?? '').split(',').filter(Boolean);
/** How long the gateway is left idle before its settled RSS is read: past the transform workers' idle retirement (60 s). */
const SETTLE_MS = 65_000;

/** Steal at or above this share is printed beside the row: its figures are not comparable. */
const STEAL_WARN_PCT = 5;

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const round1 = (x: number): number => Math.round(x * 10) / 10;
const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;

/** Means over the rounds (p99: the worst round). */
function combine(runs: Figures[]) {
  return {
    reqPerSec: Math.round(mean(runs.map((r) => r.reqPerSec))),
    p50Ms: Math.round(mean(runs.map((r) => r.p50Ms)) * 1000) / 1000,
    p99Ms: Math.max(...runs.map((r) => r.p99Ms)),
    cpuUsPerReq: round1(mean(runs.map((r) => r.cpuUsPerReq))),
    total: runs.reduce((n, r) => n + r.total, 0),
    ok: runs.reduce((n, r) => n + r.ok, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    stealPct: Math.round(mean(runs.map((r) => r.stealPct))),
  };
}
type Combined = ReturnType<typeof combine>;

/** How OpenClaw's built-in hooks are sent a scenario: the same request, except where they differ. */
let peerSeq = 0;
function peerLoad(s: Scenario): Load {
  // They verify no signature: the signed row's mapping is reached with the token.
  if (s.peer === 'github') return { ...s.load, headers: { ...s.load.headers, authorization: `Bearer ${HOOK_TOKEN}` } };
  // OpenClaw locks an address after 20 failures, so wrong tokens come from ever new addresses.
  if (s.peer === '401')
    return {
      ...s.load,
      vary: (h) => ({
        ...h,
        'x-forwarded-for': `10.${(++peerSeq >> 16) & 255}.${(peerSeq >> 8) & 255}.${peerSeq & 255}`,
      }),
    };
  // OpenClaw's lock refuses only failing requests (the right token from a locked address is served),
  // so its 429s are wrong tokens from the locked address.
  if (s.peer === '429') return { ...s.load, headers: { ...s.load.headers, authorization: 'Bearer wrong' } };
  return s.load;
}

/**
 * How the plugin inside OpenClaw is sent a scenario: what the built-in hooks are sent (its lockout is
 * set as theirs), at its own path; the signed row signed, as the standalone gateway is sent it.
 */
function pluginLoad(s: Scenario): Load {
  const load = s.peer === 'github' ? s.load : peerLoad(s);
  return { ...load, path: load.path.replace(/^\/hooks\//, `${PLUGIN_PATH}/`) };
}

/** One OpenClaw side of a row: a gateway, the hooks path it is driven at, and the load it is sent. */
interface OpenClawDriven {
  side: OpenClawSide;
  hooksPath: string;
  load: Load;
  runs: Figures[];
}

async function status(url: string, load: Load): Promise<number> {
  const res = await fetch(url + load.path, { method: 'POST', headers: load.headers, body: load.body });
  await res.arrayBuffer();
  return res.status;
}

/** Rotates the hook token in the config file and polls with the new one until it is accepted. */
async function reloadApplyTimes(gw: Side & { dir: string }, hooks: Record<string, unknown>) {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    const token = `reload-token-${i}-0123456789abcdef`;
    const started = performance.now();
    await writeFile(path.join(gw.dir, 'gateway.json5'), JSON.stringify(gatewayConfig({ ...hooks, token })));
    for (;;) {
      const res = await fetch(`${gw.url}/hooks/wake`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"text":"probe","mode":"next-heartbeat"}',
      });
      await res.arrayBuffer();
      if (res.status === 200) break;
      if (performance.now() - started > 10_000) throw new Error('the reload never applied');
      await new Promise((r) => setTimeout(r, 5));
    }
    samples.push(Math.round(performance.now() - started));
    await new Promise((r) => setTimeout(r, 500));
  }
  const sorted = [...samples].sort((a, b) => a - b);
  return { samples, medianMs: sorted[2]!, maxMs: sorted[4]! };
}

function describe(name: string, f: Combined): string {
  return `${name} ${String(f.reqPerSec).padStart(6)} req/s  p50 ${f.p50Ms.toFixed(2)} ms  p99 ${f.p99Ms} ms  CPU ${f.cpuUsPerReq} µs/req`;
}

/** The inside-OpenClaw figures of a row: the plugin's [0] and the built-in hooks' [1]. */
async function insideFigures(s: Scenario, [plugin, builtIn]: OpenClawDriven[]) {
  const p = combine(plugin!.runs);
  const b = combine(builtIn!.runs);
  return {
    plugin: { ...p, statusSeen: await statusAfterLock(s, plugin!) },
    builtIn: { ...b, statusSeen: await statusAfterLock(s, builtIn!) },
    timesBuiltIn: round1(p.reqPerSec / Math.max(1, b.reqPerSec)),
    // Undefined when the built-in hooks answered nothing in the time (a saturated OpenClaw).
    cpuOfBuiltIn: b.cpuUsPerReq ? Number((p.cpuUsPerReq / b.cpuUsPerReq).toPrecision(2)) : undefined,
  };
}

/**
 * The status an OpenClaw side answers the row's request with; a 429 row's address is locked again
 * first (the lock lasts a minute, and a busy OpenClaw's quiet wait after a round can outlast it).
 */
async function statusAfterLock(s: Scenario, o: { side: Side; hooksPath: string; load: Load }): Promise<number> {
  if (s.peer === '429') await lockAddress(o.side.url, o.hooksPath, LOCKED_ADDRESS);
  return status(o.side.url, o.load);
}

async function main(): Promise<void> {
  await promisify(execFile)(process.execPath, [path.join(ROOT, 'build.mjs')], { cwd: ROOT });
  const scenarios = SCENARIOS.filter((s) => wanted(s.name));
  const bare = await startBare();
  const gateways = new Map<string, Side & { dir: string }>();
  const tails: AbortController[] = [];
  const names = [...new Set(scenarios.flatMap((s) => [s.gateway, ...(s.variants ?? [])]).concat('main'))];
  const redis = names.some((name) => GATEWAYS[name]!.redis) ? await startRedis() : undefined;
  for (const name of names) {
    const spec = GATEWAYS[name]!;
    const hooks = spec.redis ? { ...spec.hooks, sharedState: { redis: redis!.url } } : spec.hooks;
    const gw = await startHookgate(hooks, spec.gateway, spec.storage ? { storage: spec.storage } : {});
    for (const hook of spec.paused ?? []) {
      const res = await fetch(`${gw.url}/api/hooks/${hook}/pause`, {
        method: 'POST',
        headers: { authorization: `Bearer ${GATEWAY_TOKEN}` },
      });
      if (res.status !== 200) throw new Error(`pausing ${hook} answered ${res.status}`);
    }
    if (spec.tail) tails.push(await openTail(gw.url));
    gateways.set(name, gw);
  }
  const locked = gateways.get('locked');
  if (locked) {
    await status(locked.url, {
      path: '/hooks/wake',
      body: '{}',
      headers: { authorization: 'Bearer wrong', 'x-forwarded-for': LOCKED_ADDRESS },
    });
  }
  // BENCH_OPENCLAW_PROFILE=<dir>: the OpenClaw with the plugin runs with --cpu-prof into that folder.
  const cpuProfileDir = process.env.BENCH_OPENCLAW_PROFILE;
  let withPlugin = PEERS.includes('openclaw') ? await startOpenClaw({ plugin: true, cpuProfileDir }) : undefined;
  let openclaw = withPlugin ? await startOpenClaw({ plugin: false }) : undefined;
  // Both idle since their start: the RSS the plugin adds before any load.
  const openclawStartRss = openclaw && {
    withPluginMb: await rssMb(withPlugin!.pid),
    withoutPluginMb: await rssMb(openclaw.pid),
  };
  const peaks = new Map([...gateways].map(([name, gw]) => [name, watchRss(gw.pid)]));
  let openclawPeaks = openclaw && { withPlugin: watchRss(withPlugin!.pid), withoutPlugin: watchRss(openclaw.pid) };
  /** The peaks of OpenClaw processes stopped before the end (restarted after a row's backlog). */
  const earlierOpenclawPeaks = { withPluginMb: 0, withoutPluginMb: 0 };

  console.log(
    `hookgate benchmark: ${ROUNDS} x ${SECONDS} s per side and scenario (alternating), no pipelining${openclaw ? ', OpenClaw built-in hooks beside' : ''}`,
  );
  console.log(
    `machine: ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}\n`,
  );
  const rows = [];
  for (const s of scenarios) {
    const gw = gateways.get(s.gateway)!;
    const peer = s.peer && openclaw ? openclaw : undefined;
    const variants = (s.variants ?? []).map((name) => ({ name, side: gateways.get(name)!, runs: [] as Figures[] }));
    // Inside OpenClaw: the plugin's hooks and the built-in ones of the same gateway.
    const inside: OpenClawDriven[] =
      s.peer && withPlugin
        ? [
            { side: withPlugin, hooksPath: PLUGIN_PATH, load: pluginLoad(s), runs: [] },
            { side: withPlugin, hooksPath: '/hooks', load: peerLoad(s), runs: [] },
          ]
        : [];
    // Warm up every side briefly, then measure them alternately, from quiet.
    const sides = [gw, bare, ...variants.map((v) => v.side)];
    const warm = [...sides.map((side) => ({ side, load: s.load })), ...inside];
    if (peer) warm.push({ side: peer, load: peerLoad(s) });
    for (const { side, load } of warm) {
      await autocannon({
        url: side.url + load.path,
        method: 'POST',
        headers: load.headers,
        body: load.body,
        connections: s.connections,
        duration: 1,
      });
    }
    for (const side of [...sides, ...(peer ? [peer] : []), ...(withPlugin && s.peer ? [withPlugin] : [])])
      await quietCpu(side.pid);
    const runs: { bare: Figures[]; hookgate: Figures[]; openclaw: Figures[] } = {
      bare: [],
      hookgate: [],
      openclaw: [],
    };
    const rowPeak = watchRss(gw.pid);
    for (let round = 0; round < ROUNDS; round++) {
      runs.bare.push(await drive(bare.url, bare.pid, s.load, s.connections, SECONDS));
      runs.hookgate.push(await drive(gw.url, gw.pid, s.load, s.connections, SECONDS));
      for (const v of variants) v.runs.push(await drive(v.side.url, v.side.pid, s.load, s.connections, SECONDS));
      if (peer) {
        if (s.peer === '429') await lockAddress(peer.url, '/hooks', LOCKED_ADDRESS);
        runs.openclaw.push(await drive(peer.url, peer.pid, peerLoad(s), s.connections, SECONDS));
      }
      for (const o of inside) {
        if (s.peer === '429') await lockAddress(o.side.url, o.hooksPath, LOCKED_ADDRESS);
        o.runs.push(await drive(o.side.url, o.side.pid, o.load, s.connections, SECONDS));
      }
    }
    const peakRssMb = await rowPeak.stop();
    // A row with a tail variant: the tail's cost also in pairs on its own gateway (tail-pairs.ts).
    const paired = variants.some((v) => GATEWAYS[v.name]!.tail)
      ? await tailPairs(gw, s.load, s.connections, SECONDS, TAIL_PAIRS)
      : undefined;
    const b = combine(runs.bare);
    const g = combine(runs.hookgate);
    const o = peer ? combine(runs.openclaw) : undefined;
    const statusSeen = await status(gw.url, s.load);
    const row = {
      scenario: s.name,
      connections: s.connections,
      goal: s.goal,
      bare: b,
      hookgate: { ...g, statusSeen },
      ratio: ratio(g.reqPerSec, b.reqPerSec),
      /** hookgate's CPU per request over bare's; the goal allows at most 1/goal. */
      cpuRatio: ratio(g.cpuUsPerReq, b.cpuUsPerReq),
      rssMb: await rssMb(gw.pid),
      peakRssMb,
      openclaw: o && {
        ...o,
        statusSeen: await statusAfterLock(s, { side: peer!, hooksPath: '/hooks', load: peerLoad(s) }),
        ratio: ratio(o.reqPerSec, b.reqPerSec),
      },
      /** The same load on other gateways: req/s and CPU per request against the main figure. */
      variants: variants.map((v) => {
        const f = combine(v.runs);
        return {
          gateway: v.name,
          ...f,
          ofHookgate: ratio(f.reqPerSec, g.reqPerSec),
          cpuOfHookgate: ratio(f.cpuUsPerReq, g.cpuUsPerReq),
        };
      }),
      /**
       * The live tail's cost in pairs of phases on this row's gateway, without and with a tail
       * (median, range).
       */
      tailPairs: paired && {
        pairs: paired.pairs,
        seconds: paired.seconds,
        cpuRatio: paired.cpuRatio,
        reqRatio: paired.reqRatio,
      },
      /** The hypervisor's steal while the row's bare and hookgate sides ran, as a share of the machine. */
      stealPct: Math.max(b.stealPct, g.stealPct),
      /** hookgate's req/s over OpenClaw's. */
      timesOpenclaw: o ? round1(g.reqPerSec / Math.max(1, o.reqPerSec)) : undefined,
      /** The plugin and the built-in hooks inside one OpenClaw (CPU: the OpenClaw process's). */
      insideOpenclaw: inside.length ? await insideFigures(s, inside) : undefined,
    };
    rows.push(row);
    // OpenClaw goes on with the agent row's accepted runs for minutes after its load: started afresh,
    // so that work weighs on no later row (its CPU a request counts what it did by its quiet wait).
    if (s.peer === 'agent' && withPlugin && openclaw && openclawPeaks) {
      earlierOpenclawPeaks.withPluginMb = Math.max(
        earlierOpenclawPeaks.withPluginMb,
        await openclawPeaks.withPlugin.stop(),
      );
      earlierOpenclawPeaks.withoutPluginMb = Math.max(
        earlierOpenclawPeaks.withoutPluginMb,
        await openclawPeaks.withoutPlugin.stop(),
      );
      await withPlugin.stop();
      await openclaw.stop();
      withPlugin = await startOpenClaw({ plugin: true, cpuProfileDir });
      openclaw = await startOpenClaw({ plugin: false });
      openclawPeaks = { withPlugin: watchRss(withPlugin.pid), withoutPlugin: watchRss(openclaw.pid) };
      console.log('  (both OpenClaw gateways started afresh: they were still working off the accepted runs)');
    }
    if (statusSeen !== s.expect) console.warn(`  ! ${s.name}: expected ${s.expect}, saw ${statusSeen}`);
    if (g.ok < g.total * 0.99 && s.expect < 300)
      console.warn(`  ! ${s.name}: only ${g.ok} of ${g.total} answers were 2xx`);
    console.log(`${s.name} (${s.connections} conn.)`);
    console.log(`  ${describe('hookgate', g)} | RSS ${row.rssMb} MB, peak ${peakRssMb} MB`);
    console.log(`  ${describe('bare    ', b)}`);
    for (const v of row.variants)
      console.log(
        `  ${describe(v.gateway.padEnd(8), v)} | ${v.ofHookgate.toFixed(2)} of hookgate's req/s, CPU ${v.cpuOfHookgate.toFixed(2)}x`,
      );
    if (paired)
      console.log(
        `  live tail, ${paired.pairs} pairs of ${paired.seconds} s on the hookgate side without/with it: CPU ${paired.cpuRatio.median.toFixed(2)}x (${paired.cpuRatio.min.toFixed(2)}-${paired.cpuRatio.max.toFixed(2)}), req/s ${paired.reqRatio.median.toFixed(2)} (${paired.reqRatio.min.toFixed(2)}-${paired.reqRatio.max.toFixed(2)})`,
      );
    if (o) console.log(`  ${describe('openclaw', o)} | status ${row.openclaw!.statusSeen}`);
    const io = row.insideOpenclaw;
    if (io) {
      console.log(`  inside OpenClaw (plugin enabled):`);
      console.log(
        `    ${describe('hookgate', io.plugin)} | status ${io.plugin.statusSeen}, ${io.plugin.ok} of ${io.plugin.total} 2xx`,
      );
      console.log(
        `    ${describe('built-in', io.builtIn)} | status ${io.builtIn.statusSeen}, ${io.builtIn.ok} of ${io.builtIn.total} 2xx`,
      );
      console.log(`    hookgate ${io.timesBuiltIn}x the built-in hooks' req/s, CPU ${io.cpuOfBuiltIn ?? '-'}x theirs`);
    }
    console.log(
      `  ratio ${row.ratio.toFixed(2)}${s.goal ? ` (goal ${s.goal})` : ''}, CPU ${row.cpuRatio.toFixed(2)}x bare's${s.goal ? ` (goal <= ${(1 / s.goal).toFixed(2)})` : ''}, p99 ${g.p99Ms} ms against bare's ${b.p99Ms}${o ? `, ${row.timesOpenclaw}x OpenClaw` : ''}${row.stealPct >= STEAL_WARN_PCT ? `; ! the host stole ${row.stealPct}% of the CPU meanwhile` : ''}`,
    );
  }
  const backHalf: BackHalfRow[] = [];
  if (wanted(AGENT_RUNS_ROW)) backHalf.push(await agentRunsAgainstModel(SECONDS));
  if (wanted(QUEUE_ROW) || wanted(BACKLOG_ROW)) backHalf.push(...(await queueRows(SECONDS)));
  for (const r of backHalf) {
    const goal =
      r.goal === undefined
        ? ''
        : ` (goal ${r.goal} within ${r.tolerance! * 100}%: ${Math.abs(r.perSecond - r.goal) <= r.goal * r.tolerance! ? 'met' : 'missed'})`;
    console.log(`${r.name}`);
    console.log(
      `  ${r.perSecond} ${r.unit}${goal}, ${r.items} in all, CPU ${r.cpuUsPerItem} µs per item${r.stealPct >= STEAL_WARN_PCT ? `; ! the host stole ${r.stealPct}% of the CPU meanwhile` : `, steal ${r.stealPct}%`}`,
    );
  }
  console.log('');
  const deliveries = await benchDeliveries(wanted);
  const main = gateways.get('main')!;
  const reload = await reloadApplyTimes(main, GATEWAYS.main!.hooks);
  console.log(
    `\nhot reload: write -> first request served by the new config: median ${reload.medianMs} ms, max ${reload.maxMs} ms`,
  );
  const peakRss: Record<string, number> = {};
  for (const [name, watch] of peaks) peakRss[name] = await watch.stop();
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const settledRssMb = await rssMb(main.pid);
  const openclawRssMb = openclaw ? await rssMb(openclaw.pid) : undefined;
  console.log(
    `memory: peak RSS through the bench ${peakRss.main} MB (main gateway), ${settledRssMb} MB after ${SETTLE_MS / 1000} s idle${openclawRssMb ? `; OpenClaw ${openclawRssMb} MB` : ''}`,
  );
  const openclawMemory = openclawPeaks && {
    start: openclawStartRss!,
    peak: {
      withPluginMb: Math.max(earlierOpenclawPeaks.withPluginMb, await openclawPeaks.withPlugin.stop()),
      withoutPluginMb: Math.max(earlierOpenclawPeaks.withoutPluginMb, await openclawPeaks.withoutPlugin.stop()),
    },
    settled: { withPluginMb: await rssMb(withPlugin!.pid), withoutPluginMb: openclawRssMb! },
  };
  if (openclawMemory) {
    const added = (m: { withPluginMb: number; withoutPluginMb: number }): string =>
      `${m.withPluginMb} MB with the plugin, ${m.withoutPluginMb} without (+${round1(m.withPluginMb - m.withoutPluginMb)} MB)`;
    console.log(
      `OpenClaw RSS: after start ${added(openclawMemory.start)}; peak ${added(openclawMemory.peak)}; after ${SETTLE_MS / 1000} s idle ${added(openclawMemory.settled)}`,
    );
  }

  const result = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model,
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    secondsPerRun: SECONDS,
    rounds: ROUNDS,
    peers: PEERS,
    rows,
    deliveries,
    backHalf,
    reloadApplyMs: reload,
    memory: { peakRssMb: peakRss, settledRssMb, openclawRssMb, openclaw: openclawMemory },
  };
  await writeFile(path.join(ROOT, 'bench', 'results', 'latest.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log('\nwritten to bench/results/latest.json');
  for (const tail of tails) tail.abort();
  for (const side of [bare, ...gateways.values(), ...(openclaw ? [openclaw, withPlugin!] : [])]) await side.stop();
  await redis?.stop();
}

await main();
