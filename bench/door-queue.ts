// The queue on Redis (hooks.queue), two rows in one run on one redis-server: wakes through a door
// (--role ingress) into the queue and out through an assistant, per second and CPU per action (door
// and assistant processes, the work left behind included), beside the same wakes acted on at once by
// a gateway without the queue; and a backlog of BACKLOG actions drained per second by an assistant
// that comes back to it. Redis runs with AOF off here: the rows measure hookgate, not the disk.
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis-server.ts';
import { drive, hostTimes, quietCpu, type Load } from './drive.ts';
import { HOOK_TOKEN, cpuMicros, startHookgate } from './processes.ts';
import type { BackHalfRow } from './back-half.ts';

export const QUEUE_ROW = 'wakes through door -> Redis -> assistant';
export const BACKLOG_ROW = 'queue backlog drained by an assistant coming back';

const SENDERS = 32;
const BACKLOG = 100_000;
const STREAM = 'hookgate:queue:bench';
/** The bench's wake (autocannon, as every other row): the same load on both sides. */
const WAKE: Load = {
  path: '/hooks/wake',
  body: JSON.stringify({ text: 'bench wake', mode: 'next-heartbeat' }),
  headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once the queue holds nothing, taken or not (every action confirmed). */
async function drained(redis: Redis, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while ((await redis.xlen(STREAM)) > 0) {
    if (performance.now() > deadline) throw new Error('the queue did not drain in time');
    await sleep(20);
  }
}

const steal = (a: { total: number; steal: number }, b: { total: number; steal: number }): number =>
  Math.round(((b.steal - a.steal) / Math.max(1, b.total - a.total)) * 100);

export async function queueRows(seconds: number): Promise<BackHalfRow[]> {
  const server = await startRedis();
  const redis = new Redis(server.url);
  const queue = { redis: server.url, name: 'bench' };
  const local = await startHookgate({});
  const door = await startHookgate({ queue }, { role: 'ingress' });
  let assistant = await startHookgate({ queue });
  const rows: BackHalfRow[] = [];
  try {
    // The local wake, in the same run: its rate and CPU per wake.
    const localRow = await drive(local.url, local.pid, WAKE, SENDERS, seconds);
    rows.push({
      name: 'wakes acted on at once (no queue), the same senders',
      unit: 'wakes/s',
      perSecond: localRow.reqPerSec,
      cpuUsPerItem: Math.round(localRow.cpuUsPerReq),
      items: localRow.ok,
      stealPct: localRow.stealPct,
    });

    // Through the queue: the door's figures, and the assistant's CPU until it confirmed the last one.
    const assistantBefore = await cpuMicros(assistant.pid);
    const steal0 = await hostTimes();
    const t0 = performance.now();
    const doorRow = await drive(door.url, door.pid, WAKE, SENDERS, seconds);
    await drained(redis, 300_000);
    const queueSeconds = (performance.now() - t0) / 1000;
    const assistantCpu = (await quietCpu(assistant.pid)) - assistantBefore;
    rows.push({
      name: `${QUEUE_ROW} (one of each; carried out per second until the last was confirmed)`,
      unit: 'wakes/s',
      perSecond: Math.round(doorRow.ok / queueSeconds),
      cpuUsPerItem: Math.round(doorRow.cpuUsPerReq + assistantCpu / Math.max(1, doorRow.ok)),
      items: doorRow.ok,
      stealPct: steal(steal0, await hostTimes()),
    });

    // The backlog: the assistant away while BACKLOG actions wait (added as a door adds them, in
    // pipelines: what is timed is the drain), then back.
    await assistant.stop();
    const entry = (i: number) =>
      JSON.stringify({
        id: `backlog-${i}`,
        hook: 'wake',
        requestId: `b-${i}`,
        action: { wakes: [{ text: `backlog ${i}`, mode: 'next-heartbeat', hook: 'wake' }], runs: [] },
      });
    for (let i = 0; i < BACKLOG; i += 1000) {
      const pipe = redis.pipeline();
      for (let j = i; j < i + 1000; j++) pipe.xadd(STREAM, '*', 'a', entry(j));
      await pipe.exec();
    }
    const backlogSteal = await hostTimes();
    assistant = await startHookgate({ queue });
    const startedAt = performance.now();
    const cpu0 = await cpuMicros(assistant.pid);
    await drained(redis, 1_800_000);
    const drainSeconds = (performance.now() - startedAt) / 1000;
    rows.push({
      name: `${BACKLOG_ROW} (${BACKLOG} wakes, timed from its "listening")`,
      unit: 'actions/s',
      perSecond: Math.round(BACKLOG / drainSeconds),
      cpuUsPerItem: Math.round(((await quietCpu(assistant.pid)) - cpu0) / BACKLOG),
      items: BACKLOG,
      stealPct: steal(backlogSteal, await hostTimes()),
    });
  } finally {
    redis.disconnect();
    await Promise.all([local.stop(), door.stop(), assistant.stop()]);
    await server.stop();
  }
  return rows;
}
