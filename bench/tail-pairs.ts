// What a live tail costs the wake row, measured so that 5% can show: one gateway driven in short
// phases without and with the console's live tail open on it (the same process, so no difference of
// JIT or heap between two gateways counts), in ABBA order (a drift of the shared machine's load
// weighs on both sides alike), each pair giving a ratio of CPU per request and of req/s; the median
// of the pairs is the figure, their range beside it. The variant gateway "live tail open" of the
// same row is still measured in the row's own rounds, as every variant is.
import { drive, type Figures, type Load } from './drive.ts';
import { GATEWAY_TOKEN, type Side } from './processes.ts';

/** Opens the request log's live tail as the console does and reads it until aborted. */
export async function openTail(url: string): Promise<AbortController> {
  const stop = new AbortController();
  const res = await fetch(`${url}/api/requests/live`, {
    headers: { authorization: `Bearer ${GATEWAY_TOKEN}`, accept: 'text/event-stream' },
    signal: stop.signal,
  });
  if (res.status !== 200 || !res.body) throw new Error(`the live tail answered ${res.status}`);
  void (async () => {
    for await (const _chunk of res.body!);
  })().catch(() => {});
  return stop;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface TailPairs {
  pairs: number;
  seconds: number;
  /** CPU per request with the tail over without it, per pair. */
  cpuRatio: Spread;
  /** req/s with the tail over without it, per pair. */
  reqRatio: Spread;
  without: Figures[];
  withTail: Figures[];
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

function spread(xs: number[]): Spread {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median: round2(median), min: round2(sorted[0]!), max: round2(sorted.at(-1)!) };
}

/** `pairs` pairs of phases of `seconds` on `side`, without and with a tail, in ABBA order. */
export async function tailPairs(
  side: Side,
  load: Load,
  connections: number,
  seconds: number,
  pairs: number,
): Promise<TailPairs> {
  const without: Figures[] = [];
  const withTail: Figures[] = [];
  const phase = async (tail: boolean): Promise<void> => {
    if (!tail) {
      without.push(await drive(side.url, side.pid, load, connections, seconds));
      return;
    }
    const stop = await openTail(side.url);
    try {
      withTail.push(await drive(side.url, side.pid, load, connections, seconds));
    } finally {
      stop.abort();
    }
  };
  for (let pair = 0; pair < pairs; pair++) {
    const tailFirst = pair % 2 === 1;
    await phase(tailFirst);
    await phase(!tailFirst);
  }
  return {
    pairs,
    seconds,
    cpuRatio: spread(without.map((w, i) => withTail[i]!.cpuUsPerReq / w.cpuUsPerReq)),
    reqRatio: spread(without.map((w, i) => withTail[i]!.reqPerSec / w.reqPerSec)),
    without,
    withTail,
  };
}
