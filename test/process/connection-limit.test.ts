// A gateway under a tight descriptor limit (prlimit) and a flood of connections that never finish a
// request: the cap on connections and the per-address share keep descriptors free for the session
// files, so normal clients go on being served and nothing fails with EMFILE.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { HOOK_TOKEN, spawnGateway, tempStateDir, writeConfig, type SpawnedGateway } from '../helpers/spawn-gateway.ts';
import { readdir } from 'node:fs/promises';
import { waitUntil } from '../helpers/common.ts';

const OPEN_FILES = 256;
let gw: SpawnedGateway;
let port: number;

before(async () => {
  const dir = await tempStateDir();
  await writeConfig(dir);
  gw = await spawnGateway(dir, [], undefined, OPEN_FILES);
  port = Number(new URL(gw.url).port);
});

after(async () => {
  await gw?.stop();
});

/** Opens `count` connections from `from` that send half a request line and then nothing. */
async function flood(from: string[], count: number): Promise<net.Socket[]> {
  const sockets: net.Socket[] = [];
  await Promise.all(
    Array.from({ length: count }, (_, i) => {
      return new Promise<void>((resolve) => {
        const s = net.connect({ port, host: '127.0.0.1', localAddress: from[i % from.length] });
        s.on('error', () => resolve());
        s.on('close', () => resolve());
        s.once('connect', () => {
          s.write('POST /hooks/wake HT');
          resolve();
        });
        sockets.push(s);
      });
    }),
  );
  return sockets;
}

function stillOpen(sockets: net.Socket[]): number {
  return sockets.filter((s) => !s.destroyed && !s.closed).length;
}

/** The gateway's open descriptors (prlimit execs it, so the child's pid is the gateway's). */
async function descriptors(): Promise<number> {
  return (await readdir(`/proc/${gw.child.pid}/fd`)).length;
}

async function wake(text: string): Promise<number> {
  const res = await fetch(`${gw.url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}` },
    body: JSON.stringify({ text }),
    signal: AbortSignal.timeout(5000),
  });
  await res.arrayBuffer();
  return res.status;
}

test('one address holding more sockets than the descriptor limit allows: others are still served', async () => {
  const sockets = await flood(['127.0.0.2'], OPEN_FILES + 100);
  try {
    // The gateway closes what is over the share: awaited, however long a busy machine takes.
    await waitUntil(() => stillOpen(sockets) < OPEN_FILES / 2, 'flood sockets over the share closed', 20_000);
    for (let i = 0; i < 20; i++) assert.equal(await wake(`served during the flood ${i}`), 200);
  } finally {
    for (const s of sockets) s.destroy();
  }
});

test('a flood from many addresses stops at the cap: no request fails for want of a descriptor', async () => {
  const from = Array.from({ length: 12 }, (_, i) => `127.0.1.${i + 1}`);
  const idle = await descriptors();
  const sockets = await flood(from, OPEN_FILES + 100);
  try {
    await waitUntil(() => stillOpen(sockets) < OPEN_FILES - 32, 'flood sockets over the cap closed', 20_000);
  } finally {
    for (const s of sockets) s.destroy();
  }
  // Served once the gateway has seen the flood's sockets go (the cap counts them until then).
  let now = Infinity;
  const poll = setInterval(() => void descriptors().then((n) => (now = n)), 20);
  try {
    await waitUntil(() => now <= idle + 4, 'the gateway back to its idle descriptors', 20_000);
  } finally {
    clearInterval(poll);
  }
  for (let i = 0; i < 20; i++) assert.equal(await wake(`served after the flood ${i}`), 200);
  assert.doesNotMatch(gw.output(), /EMFILE|"level":"error"/);
  // The refusals are summed up in one warning a second after the first.
  await waitUntil(
    () => /connections refused over gateway\.maxConnections/.test(gw.output()),
    'the refusal warning',
    20_000,
  );
});
