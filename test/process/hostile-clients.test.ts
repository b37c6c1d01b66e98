// Hostile clients against the real gateway process over loopback: slowloris on headers and on the
// body, a flood of oversized bodies, and a flood of wrong tokens from many addresses. Normal clients
// must keep being served throughout, and the gateway's memory must stay bounded.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import {
  GATEWAY_TOKEN,
  HOOK_TOKEN,
  spawnGateway,
  tempStateDir,
  writeConfig,
  type SpawnedGateway,
} from '../helpers/spawn-gateway.ts';
import { waitUntil } from '../helpers/common.ts';

const MAX_BODY = 65_536;
const HAS_PROC = existsSync('/proc/self/status');

let gw: SpawnedGateway;
let port: number;

before(async () => {
  const dir = await tempStateDir();
  await writeConfig(dir, {
    gateway: { trustedProxies: ['127.0.0.1'] },
    hooks: { bodyTimeoutSeconds: 1, maxBodyBytes: MAX_BODY },
  });
  gw = await spawnGateway(dir);
  port = Number(new URL(gw.url).port);
});

after(async () => {
  await gw?.stop();
});

/** Resident set size of the gateway process, in bytes. */
function rss(): number {
  const status = readFileSync(`/proc/${gw.child.pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  assert.ok(m, 'VmRSS missing from /proc/<pid>/status');
  return Number(m[1]) * 1024;
}

const MB = 1024 * 1024;

/** A normal client: a wake with the hook token, optionally as a given forwarded address. */
async function wake(
  text: string,
  forwardedFor?: string,
  token = HOOK_TOKEN,
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  if (forwardedFor) headers['x-forwarded-for'] = forwardedFor;
  const res = await fetch(`${gw.url}/hooks/wake`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ text }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** Runs `count` tasks with at most `limit` in flight. */
async function pool<T>(count: number, limit: number, task: (i: number, worker: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async (w: number): Promise<void> => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i, w);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, (_, w) => worker(w)));
  return results;
}

interface Parsed {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Bytes of the buffer this response took. */
  size: number;
}

/** The first complete response in `buf`, if there is one (Content-Length framed, as the gateway sends). */
function parseResponse(buf: Buffer): Parsed | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3})/.exec(lines[0]!);
  if (!m) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const rest = buf.subarray(end + 4);
  if (rest.length < length) return undefined;
  return { status: Number(m[1]), headers, body: rest.subarray(0, length).toString('utf8'), size: end + 4 + length };
}

/** One keep-alive connection sending one request at a time (lighter than fetch for a flood). */
class KeepAliveClient {
  #socket: net.Socket | undefined;
  #buf = Buffer.alloc(0);
  #waiter: { resolve(r: Parsed): void; reject(e: Error): void } | undefined;

  async request(data: string): Promise<Parsed> {
    if (this.#socket === undefined) await this.#connect();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        this.close();
        reject(new Error('no answer on a keep-alive connection within 10 s'));
      }, 10_000);
      this.#waiter = {
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
      this.#socket!.write(data);
    });
  }

  close(): void {
    this.#socket?.destroy();
  }

  #connect(): Promise<void> {
    const socket = net.connect(port, '127.0.0.1');
    this.#socket = socket;
    this.#buf = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      const r = parseResponse(this.#buf);
      if (r && this.#waiter) {
        this.#buf = this.#buf.subarray(r.size);
        const w = this.#waiter;
        this.#waiter = undefined;
        w.resolve(r);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.#socket === socket) this.#socket = undefined;
      const w = this.#waiter;
      this.#waiter = undefined;
      w?.reject(new Error('the server closed a keep-alive connection before answering'));
    });
    return new Promise((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
  }
}

/** A raw connection that records what the server sends and whether the server closed it. */
class Probe {
  readonly socket: net.Socket;
  received = Buffer.alloc(0);
  closed = false;
  closedAt = 0;
  destroyedByUs = false;
  readonly connected: Promise<void>;
  readonly done: Promise<void>;

  constructor() {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => (this.received = Buffer.concat([this.received, d])));
    this.socket.on('error', () => undefined); // EPIPE / ECONNRESET once the server has closed
    this.connected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.done = new Promise((resolve) =>
      this.socket.once('close', () => {
        this.closed = true;
        this.closedAt = Date.now();
        resolve();
      }),
    );
  }

  write(data: string | Buffer): boolean {
    return !this.closed && !this.socket.destroyed && this.socket.write(data);
  }

  destroy(): void {
    if (!this.closed) this.destroyedByUs = true;
    this.socket.destroy();
  }
}

/** Resolves when every probe is closed, or rejects after `ms`. */
async function allClosed(probes: Probe[], ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const open = probes.filter((p) => !p.closed).length;
      reject(new Error(`${open} of ${probes.length} ${what} still open after ${ms} ms`));
    }, ms);
  });
  try {
    await Promise.race([Promise.all(probes.map((p) => p.done)), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A wake on a brand-new connection (fetch would reuse a kept-alive one). */
async function freshWake(text: string): Promise<Parsed> {
  const p = new Probe();
  const body = JSON.stringify({ text });
  try {
    await p.connected;
    p.write(
      `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await waitUntil(() => parseResponse(p.received) !== undefined || p.closed, 'an answer').catch(() => {});
    const r = parseResponse(p.received);
    if (r) return r;
    throw new Error(`no answer on a fresh connection: ${JSON.stringify(p.received.toString('latin1').slice(0, 200))}`);
  } finally {
    p.destroy();
  }
}

// ---------------------------------------------------------------------------

test('slowloris on headers: 50 sockets trickling header bytes get no answer while normal clients are served', async () => {
  const probes = Array.from({ length: 50 }, () => new Probe());
  await Promise.all(probes.map((p) => p.connected));
  for (const p of probes) p.write(`POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `);
  let ticks = 0;
  const trickle = setInterval(() => {
    for (const p of probes) p.write('a');
    ticks++;
  }, 500);
  try {
    for (let i = 0; i < 6; i++) {
      // Alternately on a kept-alive connection and on a new one, next to the 50 held open.
      const r =
        i % 2 === 0 ? await wake(`served during header slowloris ${i}`) : await freshWake(`fresh connection ${i}`);
      const body = typeof r.body === 'string' ? JSON.parse(r.body) : r.body;
      assert.equal(r.status, 200, JSON.stringify(body));
      assert.deepEqual(body, { ok: true, mode: 'now' });
      // The next request after the sockets trickled again.
      const tick = ticks;
      await waitUntil(() => ticks > tick, 'a trickle');
    }
    // An unfinished header section is never handed to the hooks: no answer at all, or (once the
    // server's headers timeout fires) a 408 and a close.
    for (const p of probes) {
      const text = p.received.toString('latin1');
      assert.ok(
        text === '' || text.startsWith('HTTP/1.1 408'),
        `a trickling socket got ${JSON.stringify(text.slice(0, 100))}`,
      );
      assert.ok(!p.closed || text.startsWith('HTTP/1.1 408'), 'a trickling socket was closed without a 408');
    }
    assert.ok(
      probes.some((p) => !p.closed),
      'the trickling sockets were meant to be held open during the check',
    );
  } finally {
    clearInterval(trickle);
    for (const p of probes) p.destroy();
  }
});

// The gateway sets headersTimeout 10 s and checks timeouts every second (Node's default interval is
// 30 s, which let trickling sockets live for up to 40 s).
test('slowloris on headers: the server closes trickling sockets within its 10 s headers timeout', async () => {
  const probes = Array.from({ length: 5 }, () => new Probe());
  await Promise.all(probes.map((p) => p.connected));
  const opened = Date.now();
  for (const p of probes) p.write(`POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `);
  const trickle = setInterval(() => {
    for (const p of probes) p.write('a');
  }, 500);
  try {
    await allClosed(probes, 12_500, 'trickling header sockets');
    for (const p of probes) {
      assert.ok(!p.destroyedByUs);
      assert.ok(p.closedAt - opened < 12_500);
      assert.match(p.received.toString('latin1'), /^HTTP\/1\.1 408/);
    }
    assert.equal((await wake('after the headers timeout')).status, 200);
  } finally {
    clearInterval(trickle);
    for (const p of probes) p.destroy();
  }
});

test('slowloris on the body: trickled bodies get 408 body_timeout JSON and a close, normal clients are served', async () => {
  const probes = Array.from({ length: 20 }, () => new Probe());
  await Promise.all(probes.map((p) => p.connected));
  const body = Buffer.from(`{"text":"${'s'.repeat(180)}"}`);
  probes.forEach((p, i) => {
    const framing = i % 2 === 0 ? `Content-Length: ${body.length}` : 'Transfer-Encoding: chunked';
    p.write(
      `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
        `Content-Type: application/json\r\n${framing}\r\n\r\n`,
    );
  });
  let sent = 0;
  // One body byte every 200 ms: the ~200-byte body would need ~40 s; the limit is 1 s.
  const trickle = setInterval(() => {
    if (sent >= body.length) return;
    const byte = body.subarray(sent, sent + 1);
    sent++;
    probes.forEach((p, i) =>
      p.write(i % 2 === 0 ? byte : Buffer.concat([Buffer.from('1\r\n'), byte, Buffer.from('\r\n')])),
    );
  }, 200);
  try {
    const served: number[] = [];
    for (let i = 0; i < 5; i++) {
      served.push((await wake(`served during body slowloris ${i}`)).status);
      // The next request after another body byte went out.
      const byte = sent;
      await waitUntil(() => sent > byte || sent >= body.length, 'a trickled byte');
    }
    assert.deepEqual(served, [200, 200, 200, 200, 200]);
    assert.equal((await freshWake('fresh connection during body slowloris')).status, 200);
    await allClosed(probes, 8000, 'trickling body sockets');
    assert.ok(sent < body.length, 'the whole body was sent before the server gave up');
    for (const p of probes) {
      assert.ok(!p.destroyedByUs, 'closed by the server');
      const r = parseResponse(p.received);
      assert.ok(
        r,
        `no complete answer before the close: ${JSON.stringify(p.received.toString('latin1').slice(0, 200))}`,
      );
      assert.equal(r.status, 408);
      assert.match(r.headers['content-type'] ?? '', /^application\/json/);
      const json = JSON.parse(r.body);
      assert.equal(json.ok, false);
      assert.equal(json.code, 'body_timeout');
      assert.equal(typeof json.error, 'string');
    }
    assert.equal((await wake('after body slowloris')).status, 200);
  } finally {
    clearInterval(trickle);
    for (const p of probes) p.destroy();
  }
});

type Outcome = { kind: 'response'; status: number; json: any } | { kind: 'closed' };

/** Uploads `size` bytes (Content-Length or chunked) until done or the server closes; never hangs. */
function oversizedUpload(style: 'length' | 'chunked', size: number): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const p = new Probe();
    const piece = Buffer.alloc(16 * 1024, 'a');
    const framed =
      style === 'length'
        ? piece
        : Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
    let settled = false;
    const settle = (o: Outcome | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      p.destroy();
      if (o instanceof Error) reject(o);
      else resolve(o);
    };
    const timer = setTimeout(() => settle(new Error(`${style} upload: no answer and no close within 10 s`)), 10_000);
    const answer = (): void => {
      const r = parseResponse(p.received);
      if (r) {
        let json: unknown;
        try {
          json = JSON.parse(r.body);
        } catch {
          return settle(new Error(`not JSON: ${r.status} ${JSON.stringify(r.body.slice(0, 200))}`));
        }
        settle({ kind: 'response', status: r.status, json });
      }
    };
    p.socket.on('data', answer);
    void p.done.then(() => {
      answer();
      settle({ kind: 'closed' });
    });
    void (async () => {
      await p.connected;
      const framing = style === 'length' ? `Content-Length: ${size}` : 'Transfer-Encoding: chunked';
      p.write(
        `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
          `Content-Type: application/json\r\n${framing}\r\n\r\n`,
      );
      for (let sent = 0; sent < size && !settled && !p.closed; sent += piece.length) {
        if (!p.write(framed)) {
          await Promise.race([new Promise((r) => p.socket.once('drain', r)), p.done]);
        }
      }
      if (style === 'chunked') p.write('0\r\n\r\n');
    })();
  });
}

test(
  'oversized-body flood: 300 uploads of 1 MB (Content-Length and chunked) get 413 or a close; memory stays bounded',
  { skip: !HAS_PROC && 'reads the gateway RSS from /proc' },
  async () => {
    const SIZE = 1024 * 1024;
    const styleOf = (i: number): 'length' | 'chunked' => (i % 2 === 0 ? 'length' : 'chunked');
    // Warm up the code paths (and the JIT) before the baseline.
    await pool(20, 8, (i) => oversizedUpload(styleOf(i), SIZE));
    const before = rss();
    const outcomes = await pool(300, 16, (i) => oversizedUpload(styleOf(i), SIZE));
    const afterRss = rss();

    const answered = { length: 0, chunked: 0 };
    outcomes.forEach((o, i) => {
      if (o.kind === 'closed') return;
      assert.equal(o.status, 413, `upload ${i} (${styleOf(i)}): ${o.status} ${JSON.stringify(o.json)}`);
      assert.equal(o.json.ok, false);
      assert.equal(o.json.code, 'payload_too_large');
      answered[styleOf(i)]++;
    });
    // Most uploads see the 413 before the close; at least some of each kind must.
    assert.ok(answered.length > 0 && answered.chunked > 0, `413 answers: ${JSON.stringify(answered)}`);
    assert.ok(afterRss - before < 60 * MB, `RSS grew by ${((afterRss - before) / MB).toFixed(1)} MB`);
    assert.equal(gw.child.exitCode, null);
    assert.deepEqual((await wake('after the oversized flood')).body, { ok: true, mode: 'now' });
  },
);

test(
  'wrong-token flood from 5000 addresses: right-token clients are all served, memory stays bounded, lockout still works',
  { skip: !HAS_PROC && 'reads the gateway RSS from /proc' },
  async () => {
    const address = (i: number): string => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    const clients = Array.from({ length: 32 }, () => new KeepAliveClient());
    const body = '{"text":"guess"}';
    // Every guess a different token (a repeated one would count the same).
    let guess = 0;
    const wrongOn = async (client: KeepAliveClient, xff: string): Promise<number> => {
      const r = await client.request(
        `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer wrong-${xff}-${guess++}\r\n` +
          `X-Forwarded-For: ${xff}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      if (r.status === 401) assert.equal(JSON.parse(r.body).code, 'unauthorized');
      return r.status;
    };
    /** `worker` picks the connection: each pool worker has its own. */
    const wrong = (xff: string, worker = 0): Promise<number> => wrongOn(clients[worker]!, xff);
    try {
      // Warm-up from addresses outside the measured range.
      await pool(300, clients.length, (i, w) => wrong(`172.16.${i >> 8}.${i & 255}`, w));
      const before = rss();

      const FLOOD = 5000;
      const rightStatuses: number[] = [];
      const statuses = await pool(FLOOD, clients.length, async (i, w) => {
        if (i % 100 === 50) {
          // Interleaved right-token clients from an address of their own.
          const r = await wake(`right token during the flood ${i}`, '192.0.2.10');
          rightStatuses.push(r.status);
        }
        return wrong(address(i + 1), w);
      });
      const afterRss = rss();

      assert.equal(rightStatuses.length, 50);
      assert.ok(
        rightStatuses.every((s) => s === 200),
        `right-token statuses: ${rightStatuses.join(',')}`,
      );
      const counts: Record<number, number> = {};
      for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
      // One failure per address: none of them reaches the lockout.
      assert.deepEqual(counts, { 401: FLOOD });
      assert.ok(afterRss - before < 60 * MB, `RSS grew by ${((afterRss - before) / MB).toFixed(1)} MB`);

      // A single address that keeps guessing is locked (default: 20 failures), even with the right token.
      const locked = '198.51.100.7';
      const guesses: number[] = [];
      for (let i = 0; i < 20; i++) guesses.push(await wrong(locked));
      assert.deepEqual(guesses, Array(20).fill(401));
      const refused = await wake('right token, locked address', locked);
      assert.equal(refused.status, 429);
      assert.equal(refused.body.code, 'rate_limited');
      assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      assert.equal(await wrong(locked), 429);
      // Other addresses, and the proxy's own address, are still served.
      assert.equal((await wake('neighbour of a locked address', '198.51.100.8')).status, 200);
      assert.equal((await wake('through the proxy, no forwarded address')).status, 200);
      assert.equal((await wake('flood address with the right token', address(1))).status, 200);
    } finally {
      for (const c of clients) c.close();
    }
  },
);

test('a client that half-closes after its request gets the whole answer, then the server closes', async () => {
  const text = `half-closed ${Date.now()}`;
  const body = JSON.stringify({ text, mode: 'next-heartbeat' });
  const p = new Probe();
  await p.connected;
  p.socket.end(
    `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await allClosed([p], 5000, 'half-closed connections');
  assert.equal(p.destroyedByUs, false);
  const r = parseResponse(p.received);
  assert.ok(r, `a whole answer: ${JSON.stringify(p.received.toString('latin1'))}`);
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body), { ok: true, mode: 'next-heartbeat' });
  const events = (await gw.admin(`/api/sessions/${encodeURIComponent('agent:main:main')}/history`)).entries;
  assert.ok(
    events.some((e: { text: string }) => e.text === text),
    'the event it was told about is kept',
  );
});

test('a client that half-closes partway through its body gets 400 at once, not a body timeout', async () => {
  const p = new Probe();
  await p.connected;
  p.socket.end(
    `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"text":"cut`,
  );
  await allClosed([p], 5000, 'half-closed connections');
  // A 400 for the cut body, where waiting for the rest would have ended in a 408 body_timeout.
  const r = parseResponse(p.received);
  assert.ok(r, `an answer: ${JSON.stringify(p.received.toString('latin1'))}`);
  assert.equal(r.status, 400);
  assert.deepEqual(JSON.parse(r.body), {
    ok: false,
    error: 'the connection was closed before the whole request was sent',
    code: 'bad_request',
  });
  assert.equal((await freshWake('after a cut-off body')).status, 200);
});

/** Sends only the headers of a wake with "Expect: 100-continue"; resolves with what arrives before the body is sent. */
async function expectContinue(request: { token: string; length: number }): Promise<{ probe: Probe; first: string }> {
  const p = new Probe();
  await p.connected;
  p.write(
    `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${request.token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${request.length}\r\nExpect: 100-continue\r\n\r\n`,
  );
  await waitUntil(() => p.received.length > 0 || p.closed, 'a first answer').catch(() => {});
  return { probe: p, first: p.received.toString('latin1') };
}

test('Expect: 100-continue: the 100 comes only once the body will be read, then the answer', async () => {
  const body = JSON.stringify({ text: 'after a 100', mode: 'next-heartbeat' });
  const { probe, first } = await expectContinue({ token: HOOK_TOKEN, length: Buffer.byteLength(body) });
  try {
    assert.equal(first, 'HTTP/1.1 100 Continue\r\n\r\n');
    probe.write(body);
    await waitUntil(() => parseResponse(probe.received.subarray(first.length)) !== undefined, 'the answer').catch(
      () => {},
    );
    const r = parseResponse(probe.received.subarray(first.length));
    assert.ok(r, `an answer after the body: ${JSON.stringify(probe.received.toString('latin1'))}`);
    assert.equal(r.status, 200);
    assert.equal(probe.closed, false, 'the connection stays open for the next request');
  } finally {
    probe.destroy();
  }
});

test('Expect: 100-continue: a refusal goes out instead of the 100, and closes the connection', async () => {
  const cases = [
    {
      name: 'declared length over the limit',
      token: HOOK_TOKEN,
      length: MAX_BODY + 1,
      status: 413,
      code: 'payload_too_large',
    },
    { name: 'wrong token', token: 'not-the-hook-token', length: 20, status: 401, code: 'unauthorized' },
  ];
  for (const c of cases) {
    const { probe, first } = await expectContinue(c);
    await allClosed([probe], 3000, `connections refused for ${c.name}`);
    assert.ok(!first.includes('100 Continue'), `${c.name}: ${JSON.stringify(first)}`);
    const r = parseResponse(probe.received);
    assert.ok(r, `${c.name}: ${JSON.stringify(probe.received.toString('latin1'))}`);
    assert.equal(r.status, c.status, c.name);
    assert.equal(JSON.parse(r.body).code, c.code, c.name);
    assert.equal(r.headers.connection, 'close', c.name);
  }
});

/** Writes raw bytes on a fresh connection and waits until the gateway closes it (or `ms` pass). */
async function rawExchange(data: string, ms = 5000): Promise<Probe> {
  const p = new Probe();
  await p.connected;
  p.write(data);
  await allClosed([p], ms, 'raw connections');
  return p;
}

const answersIn = (p: Probe): number => p.received.toString('latin1').split('HTTP/1.1 ').length - 1;

test('a refusal before the body closes the connection: a body trickled after a 401, 405 or 404 cannot hold it', async () => {
  const head = (method: string, target: string, token: string): string =>
    `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"text":"a`;
  for (const [method, target, token, status] of [
    ['POST', '/hooks/wake', 'wrong-token', 401],
    ['PUT', '/hooks/wake', HOOK_TOKEN, 405],
    ['POST', '/elsewhere', HOOK_TOKEN, 404],
  ] as const) {
    const started = Date.now();
    const p = await rawExchange(head(method, target, token), 3000);
    assert.ok(Date.now() - started < 900, `${method} ${target}: closed before the 1 s body timeout`);
    assert.equal(parseResponse(p.received)?.status, status);
    assert.equal(parseResponse(p.received)?.headers.connection, 'close');
    assert.equal(answersIn(p), 1);
  }
});

test('one request, one answer: broken chunk framing after a refusal adds no second answer', async () => {
  const p = await rawExchange(
    `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer wrong-token\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n5\r\n{"tex\r\nzz-not-a-chunk-size\r\n\r\n`,
  );
  assert.equal(answersIn(p), 1, p.received.toString('latin1'));
  assert.ok([400, 401].includes(parseResponse(p.received)!.status));
});

test('a whole wake followed in the same packet by garbage is answered 200 (once), then the connection closes', async () => {
  const body = JSON.stringify({ text: 'pipelined before garbage' });
  const p = await rawExchange(
    `POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}` +
      `THIS IS NOT HTTP\r\n\r\n`,
  );
  assert.equal(answersIn(p), 1, p.received.toString('latin1'));
  const r = parseResponse(p.received)!;
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body), { ok: true, mode: 'now' });
});

test('absolute-form request targets are accepted (RFC 9112 section 3.2.2)', async () => {
  const body = JSON.stringify({ text: 'absolute form' });
  const p = await rawExchange(
    `POST http://127.0.0.1:${port}/hooks/wake HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${HOOK_TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  assert.equal(parseResponse(p.received)?.status, 200, p.received.toString('latin1'));
});

test('admin API lockouts apply to the forwarded client behind a trusted proxy, not to the proxy', async () => {
  const admin = async (token: string, forwardedFor: string): Promise<number> => {
    const res = await fetch(`${gw.url}/api/sessions`, {
      headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': forwardedFor },
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    return res.status;
  };
  for (let i = 0; i < 25; i++) await admin(`wrong-admin-token-${i}`, '198.51.100.66');
  assert.equal(await admin(GATEWAY_TOKEN, '198.51.100.66'), 429);
  // Another client behind the same proxy is not locked out.
  assert.equal(await admin(GATEWAY_TOKEN, '198.51.100.67'), 200);
});
