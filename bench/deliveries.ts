// The delivery rows of the bench: agent replies to many different chats through the real gateway
// (the compiled one `npm start` runs) and a fake platform served as a real local server, with the
// pacing on. Per platform: replies a second from the first request to the last message at the
// platform, the most arrivals the platform saw in any second (its own clock), and the 429s its own
// limit had to give: a paced sender earns none.
import { fakeSlack } from '../test/helpers/fake-channels/slack.ts';
import { fakeTelegram } from '../test/helpers/fake-channels/telegram.ts';
import type { FakePlatform } from '../test/helpers/fake-channels/fake-platform.ts';
import { DELIVERY_ROWS, type DeliveryRowSpec } from './scenarios.ts';
import { HOOK_TOKEN, startHookgate } from './processes.ts';

const TOKEN = '123456:bench-platform-token-0123456789';
/** Requests in flight at once while the replies are asked for. */
const SENDERS = 32;
/** A row that has not delivered everything by then has failed. */
const DEADLINE_MS = 10 * 60_000;

export interface DeliveryRow {
  name: string;
  platform: string;
  chats: number;
  /** Replies a second: the chats over the time from the first request to the last message at the platform. */
  repliesPerSec: number;
  seconds: number;
  /** The most messages the platform received in any one second (by its clock). */
  maxPerSecond: number;
  /** 429s the platform's own limit gave: the proof that the pace held. */
  unprovoked429: number;
  delivered: number;
}

async function fakeFor(platform: DeliveryRowSpec['platform']): Promise<FakePlatform> {
  return platform === 'telegram' ? fakeTelegram(TOKEN) : fakeSlack(TOKEN);
}

async function runRow(spec: DeliveryRowSpec): Promise<DeliveryRow> {
  const fake = await fakeFor(spec.platform);
  const gw = await startHookgate(
    { maxConcurrentRuns: 32, maxQueuedRuns: spec.chats * 2 },
    {},
    { channels: { [spec.platform]: { botToken: TOKEN, apiRoot: fake.url } } },
  );
  try {
    const chats = Array.from({ length: spec.chats }, (_, i) => String(spec.firstChat + i));
    const started = Date.now();
    let next = 0;
    const sender = async (): Promise<void> => {
      while (next < chats.length) {
        const to = chats[next++]!;
        const res = await fetch(`${gw.url}/hooks/agent`, {
          method: 'POST',
          headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ message: `build ${to} passed`, name: 'Bench', channel: spec.platform, to }),
        });
        await res.arrayBuffer();
        if (res.status !== 202) throw new Error(`${spec.name}: the hook answered ${res.status}`);
      }
    };
    await Promise.all(Array.from({ length: SENDERS }, sender));
    const posts = (): number => fake.arrivals.filter((a) => a.method === 'POST').length;
    while (posts() - fake.unprovoked429 < chats.length) {
      if (Date.now() - started > DEADLINE_MS) throw new Error(`${spec.name}: ${posts()} of ${chats.length} arrived`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const times = fake.arrivals.filter((a) => a.method === 'POST').map((a) => a.at);
    const seconds = (Math.max(...times) - started) / 1000;
    return {
      name: spec.name,
      platform: spec.platform,
      chats: spec.chats,
      repliesPerSec: Math.round((spec.chats / seconds) * 10) / 10,
      seconds: Math.round(seconds * 10) / 10,
      maxPerSecond: maxInWindow(times, 1000),
      unprovoked429: fake.unprovoked429,
      delivered: new Set(fake.arrivals.map((a) => String(a.body?.chat_id ?? a.body?.channel))).size,
    };
  } finally {
    await gw.stop();
    await fake.close();
  }
}

/** The most times in any window of `ms`. */
function maxInWindow(times: number[], ms: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < sorted.length; j++) {
    while (sorted[j]! - sorted[i]! >= ms) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

/** Runs the rows `wanted` names (all by default), one after the other. */
export async function benchDeliveries(wanted: (name: string) => boolean = () => true): Promise<DeliveryRow[]> {
  const rows: DeliveryRow[] = [];
  for (const spec of DELIVERY_ROWS.filter((r) => wanted(r.name))) {
    const row = await runRow(spec);
    rows.push(row);
    console.log(`${row.name}`);
    console.log(
      `  ${row.repliesPerSec} replies/s (${row.chats} in ${row.seconds} s), at most ${row.maxPerSecond} in any second at the platform, ${row.unprovoked429} 429s earned`,
    );
  }
  return rows;
}
