// Prints bench/results/latest.json as the README's Markdown table: `npx tsx bench/table.ts`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BackHalfRow } from './back-half.ts';
import { ROOT } from './processes.ts';

interface SideFigures {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerReq: number;
}
interface Row {
  scenario: string;
  connections: number;
  goal?: number;
  bare: SideFigures;
  hookgate: SideFigures;
  ratio: number;
  cpuRatio: number;
  rssMb: number;
  peakRssMb: number;
  variants: (SideFigures & { gateway: string; ofHookgate: number; cpuOfHookgate: number })[];
  tailPairs?: { pairs: number; seconds: number; cpuRatio: Spread; reqRatio: Spread };
  openclaw?: SideFigures & { statusSeen: number };
  timesOpenclaw?: number;
  insideOpenclaw?: {
    plugin: SideFigures & { ok: number; total: number };
    builtIn: SideFigures & { ok: number; total: number };
    timesBuiltIn: number;
    cpuOfBuiltIn?: number;
  };
  stealPct?: number;
}

interface Spread {
  median: number;
  min: number;
  max: number;
}

const result = JSON.parse(await readFile(path.join(ROOT, 'bench', 'results', 'latest.json'), 'utf8')) as {
  date: string;
  machine: { cpus: number; model: string; memGiB: number; node: string };
  secondsPerRun: number;
  rounds: number;
  rows: Row[];
  backHalf?: BackHalfRow[];
  reloadApplyMs: { medianMs: number };
  memory: {
    peakRssMb: Record<string, number>;
    settledRssMb: number;
    openclawRssMb?: number;
    openclaw?: Record<'start' | 'peak' | 'settled', { withPluginMb: number; withoutPluginMb: number }>;
  };
};
const n = (x: number): string => x.toLocaleString('en-US');
const ms = (f: SideFigures): string => `${f.p50Ms < 10 ? f.p50Ms.toFixed(2) : Math.round(f.p50Ms)} / ${f.p99Ms} ms`;
const peers = result.rows.some((r) => r.openclaw);
const lines = [
  `${result.date.slice(0, 10)}, ${result.machine.cpus} vCPU ${result.machine.model}, ${result.machine.memGiB} GiB, Node ${result.machine.node.slice(1)}; ${result.rounds} x ${result.secondsPerRun} s per side and row.`,
  '',
  `| Row | conn. | hookgate req/s | p50 / p99 | CPU µs/req | bare req/s | bare p50 / p99 | bare CPU µs/req | ratio (goal) | CPU vs bare (at most) | steal |${peers ? ' OpenClaw req/s | CPU µs/req | hookgate ÷ OpenClaw |' : ''}`,
  `|---|---|---|---|---|---|---|---|---|---|---|${peers ? '---|---|---|' : ''}`,
];
for (const r of result.rows) {
  const goal = r.goal ? ` (${r.goal})` : '';
  const cpuGoal = r.goal ? ` (${(1 / r.goal).toFixed(2)})` : '';
  const peer = r.openclaw
    ? ` ${n(r.openclaw.reqPerSec)} | ${n(r.openclaw.cpuUsPerReq)} | ${r.timesOpenclaw}x |`
    : peers
      ? ' | | |'
      : '';
  lines.push(
    `| ${r.scenario} | ${r.connections} | ${n(r.hookgate.reqPerSec)} | ${ms(r.hookgate)} | ${r.hookgate.cpuUsPerReq} | ${n(r.bare.reqPerSec)} | ${ms(r.bare)} | ${r.bare.cpuUsPerReq} | ${r.ratio.toFixed(2)}${goal} | ${r.cpuRatio.toFixed(2)}${cpuGoal} | ${r.stealPct === undefined ? '' : `${r.stealPct}%`} |${peer}`,
  );
  for (const v of r.variants ?? [])
    lines.push(
      `| … ${v.gateway} | ${r.connections} | ${n(v.reqPerSec)} | ${ms(v)} | ${v.cpuUsPerReq} | | | | ${v.ofHookgate.toFixed(2)} of the row above | ${v.cpuOfHookgate.toFixed(2)}x the row above | |${peers ? ' | | |' : ''}`,
    );
}
if (result.backHalf?.length) {
  lines.push('', '| After the 200 | per second (goal) | CPU µs per item | steal |', '|---|---|---|---|');
  for (const r of result.backHalf)
    lines.push(
      `| ${r.name} | ${r.perSecond} ${r.unit}${r.goal === undefined ? '' : ` (${r.goal} ± ${r.tolerance! * 100}%)`} | ${n(r.cpuUsPerItem)} | ${r.stealPct}% |`,
    );
}
const m = result.memory;
const spread = (x: Spread, unit: string): string =>
  `${x.median.toFixed(2)}${unit} (${x.min.toFixed(2)}–${x.max.toFixed(2)})`;
for (const r of result.rows.filter((row) => row.tailPairs)) {
  const t = r.tailPairs!;
  lines.push(
    '',
    `Live tail on the ${r.scenario} row's own gateway, ${t.pairs} pairs of ${t.seconds} s phases without and with a tail (median of the pairs, range): CPU a request ${spread(t.cpuRatio, 'x')}, req/s ${spread(t.reqRatio, '')}.`,
  );
}
lines.push(
  '',
  `Memory (main gateway): peak RSS through the bench ${m.peakRssMb.main} MB, ${m.settledRssMb} MB once idle${m.openclawRssMb ? `; OpenClaw ${m.openclawRssMb} MB` : ''}. Hot reload applies in ${result.reloadApplyMs.medianMs} ms (median of 5).`,
);
const inside = result.rows.filter((r) => r.insideOpenclaw);
if (inside.length) {
  // What an OpenClaw user compares: the plugin against the built-in hooks of the same OpenClaw.
  lines.push(
    '',
    '| Inside one OpenClaw | hookgate req/s | p50 / p99 | CPU µs/req | 2xx | built-in req/s | p50 / p99 | CPU µs/req | 2xx | hookgate ÷ built-in | CPU vs built-in |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  const share = (f: { ok: number; total: number }): string => `${Math.round((f.ok / Math.max(1, f.total)) * 100)}%`;
  for (const r of inside) {
    const { plugin: p, builtIn: b, timesBuiltIn } = r.insideOpenclaw!;
    // From the figures: a saturated OpenClaw's built-in CPU a request is thousands of times the plugin's.
    const cpuOfBuiltIn = b.cpuUsPerReq ? p.cpuUsPerReq / b.cpuUsPerReq : undefined;
    lines.push(
      `| ${r.scenario} | ${n(p.reqPerSec)} | ${ms(p)} | ${n(p.cpuUsPerReq)} | ${share(p)} | ${n(b.reqPerSec)} | ${ms(b)} | ${n(b.cpuUsPerReq)} | ${share(b)} | ${timesBuiltIn}x | ${cpuOfBuiltIn === undefined ? '-' : `${cpuOfBuiltIn < 0.1 ? cpuOfBuiltIn.toPrecision(2) : cpuOfBuiltIn.toFixed(2)}x`} |`,
    );
  }
  const o = m.openclaw;
  if (o) {
    const added = (k: 'start' | 'peak' | 'settled'): string =>
      `${o[k].withPluginMb} MB with the plugin, ${o[k].withoutPluginMb} MB without (+${Math.round((o[k].withPluginMb - o[k].withoutPluginMb) * 10) / 10} MB)`;
    lines.push(
      '',
      `OpenClaw's RSS (same config, the plugin enabled or not): after start ${added('start')}; peak ${added('peak')}; once idle ${added('settled')}.`,
    );
  }
}
console.log(lines.join('\n'));
