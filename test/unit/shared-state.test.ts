// The Redis-backed limiter and dedupe keys against a real redis-server: two "instances" in one
// process, each with its own connection, local limiter and keys, sharing one Redis.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthFailureLimiter, type AuthRateLimit } from '../../plugin/auth/limiter.ts';
import { SharedAuthLimiter } from '../../plugin/auth/shared-limiter.ts';
import { SharedDedupe } from '../../plugin/dedupe/shared-dedupe.ts';
import type { DedupeLimits } from '../../plugin/dedupe/dedupe-keys.ts';
import { bodyHashOf } from '../../plugin/dedupe/body-hash.ts';
import { SharedRedis } from '../../plugin/redis/shared-redis.ts';
import type { LogFields, Logger } from '../../plugin/host.ts';
import { resolveHooksConfig, selectStandaloneConfig, type HooksSettings } from '../../plugin/config/hooks-config.ts';
import { ConfigError } from '../../plugin/errors.ts';
import { startRedis, type RedisServer } from '../helpers/redis-server.ts';
import { waitUntil } from '../helpers/common.ts';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

class Lines implements Logger {
  readonly lines: { level: string; msg: string; fields?: LogFields }[] = [];
  info = (msg: string, fields?: LogFields): void => void this.lines.push({ level: 'info', msg, fields });
  warn = (msg: string, fields?: LogFields): void => void this.lines.push({ level: 'warn', msg, fields });
  error = (msg: string, fields?: LogFields): void => void this.lines.push({ level: 'error', msg, fields });
  count = (level: string, pattern: RegExp): number =>
    this.lines.filter((l) => l.level === level && pattern.test(l.msg)).length;
}

interface Instance {
  shared: SharedRedis;
  local: AuthFailureLimiter;
  limiter: SharedAuthLimiter;
  dedupe: SharedDedupe;
  log: Lines;
  /** Settles once every script this instance sent has been answered (and none is under way). */
  scriptsDone(): Promise<void>;
  /** What its scripts answered so far (a limiter's lock is a number above 0). */
  scriptAnswers: unknown[];
  /** How many SETs it has sent (a waiting claim sends one per look). */
  sets(): number;
}

const open: SharedRedis[] = [];
after(() => {
  for (const s of open) s.close();
});

async function instance(keyPrefix: string, url = redis.url, expectUp = true): Promise<Instance> {
  const log = new Lines();
  const shared = new SharedRedis({ url, keyPrefix }, log);
  open.push(shared);
  // Watched from outside: the script calls under way and their answers, and the SETs sent.
  let running = 0;
  const scriptAnswers: unknown[] = [];
  const script = shared.script.bind(shared);
  shared.script = async (...args) => {
    running++;
    try {
      const answer = await script(...args);
      scriptAnswers.push(answer);
      return answer;
    } finally {
      running--;
    }
  };
  let sets = 0;
  const set = shared.commands.set.bind(shared.commands) as (...args: unknown[]) => unknown;
  (shared.commands as unknown as { set: (...args: unknown[]) => unknown }).set = (...args) => (sets++, set(...args));
  const local = new AuthFailureLimiter();
  const limiter = new SharedAuthLimiter(local, shared, log);
  const dedupe = new SharedDedupe(shared, log);
  await shared.connect();
  // Start gives up waiting after a second; on a busy machine Redis may answer later than that.
  if (expectUp) await waitUntil(() => shared.up, 'on Redis');
  const scriptsDone = (): Promise<void> => waitUntil(() => running === 0, 'the scripts answered');
  return { shared, local, limiter, dedupe, log, scriptsDone, scriptAnswers, sets: () => sets };
}

/** hooks.dedupe with this window. */
const limits = (windowMs: number): DedupeLimits => ({ windowMs, maxKeys: 1000 });

/** Waits until Redis holds this count for an address (the scripts run after the turn that queued them). */
async function hashField(i: Instance, key: string, count: string): Promise<void> {
  const deadline = Date.now() + 5000;
  let seen: string | null = null;
  while (seen !== count) {
    if (Date.now() > deadline) throw new Error(`${key} counts ${seen}, not ${count}`);
    seen = await i.shared.commands.hget(key, '#');
  }
}

/** Waits until Redis holds this lock key. */
const lockInRedis = (i: Instance, key: string): Promise<void> =>
  waitUntil(async () => (await i.shared.commands.exists(key)) === 1, `${key} in Redis`);

const LIMITS: AuthRateLimit = { maxFailures: 4, windowSeconds: 60, lockoutSeconds: 60 };

test('failures split across two instances lock the address on both, and only that address', async () => {
  const a = await instance('unit-lock:');
  const b = await instance('unit-lock:');
  assert.equal(a.shared.up && b.shared.up, true);
  a.limiter.recordFailure('10.0.0.1', LIMITS, 'guess-1');
  b.limiter.recordFailure('10.0.0.1', LIMITS, 'guess-2');
  a.limiter.recordFailure('10.0.0.1', LIMITS, 'guess-3');
  await hashField(a, 'unit-lock:auth:failures:10.0.0.1', '3');
  assert.equal(
    await a.shared.commands.exists('unit-lock:auth:lock:10.0.0.1'),
    0,
    'three failures: Redis locked nothing',
  );
  assert.equal(a.limiter.lockedFor('10.0.0.1'), 0, 'three failures: not yet');
  b.limiter.recordFailure('10.0.0.1', LIMITS, 'guess-4');
  // Nothing but the published lock can tell a: it reaches a over pub/sub.
  await waitUntil(() => a.limiter.lockedFor('10.0.0.1') > 0 && b.limiter.lockedFor('10.0.0.1') > 0, 'lock on both');
  assert.equal(a.limiter.lockedFor('10.0.0.2'), 0);
  assert.equal(b.log.count('warn', /locked/), 1, 'the instance whose failure locked logs it');
});

test('the same wrong credential repeated on both instances locks on both', async () => {
  const a = await instance('unit-repeat:');
  const b = await instance('unit-repeat:');
  for (let i = 0; i < 2; i++) {
    a.limiter.recordFailure('10.0.0.3', LIMITS, 'the-same-wrong-token');
    b.limiter.recordFailure('10.0.0.3', LIMITS, 'the-same-wrong-token');
  }
  await waitUntil(() => a.limiter.lockedFor('10.0.0.3') > 0 && b.limiter.lockedFor('10.0.0.3') > 0, 'lock on both');
});

test('the failures of one turn go to Redis together: one script per address, every failure counted', async () => {
  const a = await instance('unit-batch:');
  const scripts = async (): Promise<number> => {
    const stats = String(await a.shared.commands.info('commandstats'));
    return [...stats.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  };
  const limits = { ...LIMITS, maxFailures: 100 };
  const before = await scripts();
  for (let i = 0; i < 50; i++) a.limiter.recordFailure('10.0.0.8', limits, 'token\0the-same-wrong-token');
  for (let i = 0; i < 10; i++) a.limiter.recordFailure('10.0.0.8', limits);
  await hashField(a, 'unit-batch:auth:failures:10.0.0.8', '60');
  assert.equal((await scripts()) - before, 1);
});

test('a rotation on one instance forgives in Redis: the lock is lifted on both, and Redis keeps no credential', async () => {
  const a = await instance('unit-rotate:');
  const b = await instance('unit-rotate:');
  for (let i = 0; i < 2; i++) {
    a.limiter.recordFailure('10.0.0.9', LIMITS, 'token\0token-of-tomorrow');
    b.limiter.recordFailure('10.0.0.9', LIMITS, 'token\0token-of-tomorrow');
  }
  await waitUntil(() => a.limiter.lockedFor('10.0.0.9') > 0 && b.limiter.lockedFor('10.0.0.9') > 0, 'lock on both');
  const lock = await a.shared.commands.hgetall('unit-rotate:auth:lock:10.0.0.9');
  assert.equal(lock['#'], '4');
  assert.ok(!JSON.stringify(lock).includes('tomorrow'), 'fingerprints only');
  a.limiter.rotate(['token\0token-of-tomorrow'], [], LIMITS);
  await waitUntil(
    () => a.limiter.lockedFor('10.0.0.9') === 0 && b.limiter.lockedFor('10.0.0.9') === 0,
    'lifted on both',
  );
  assert.equal(await a.shared.commands.exists('unit-rotate:auth:lock:10.0.0.9'), 0, 'the lock is gone from Redis');
});

test('a credential in its grace period is not counted in Redis either', async () => {
  const a = await instance('unit-grace:');
  const b = await instance('unit-grace:');
  a.limiter.rotate([], ['token\0retired-token'], LIMITS);
  for (let i = 0; i < 10; i++) a.limiter.recordFailure('10.0.0.10', LIMITS, 'token\0retired-token');
  for (let i = 0; i < 3; i++) b.limiter.recordFailure('10.0.0.10', LIMITS, `token\0guess-${i}`);
  // Redis runs one connection's scripts in order: once b's third is counted, a's were all seen before it.
  await hashField(b, 'unit-grace:auth:failures:10.0.0.10', '3');
  assert.equal(a.limiter.lockedFor('10.0.0.10'), 0);
  assert.equal(b.limiter.lockedFor('10.0.0.10'), 0);
});

test('an instance that connects later loads the locks in force', async () => {
  const a = await instance('unit-late:');
  for (let i = 0; i < 4; i++) a.limiter.recordFailure('10.0.0.4', LIMITS, `guess-${i}`);
  await waitUntil(() => a.limiter.lockedFor('10.0.0.4') > 0, 'lock on a');
  // a locks itself at once; the failures reach Redis after the turn that recorded them.
  await lockInRedis(a, 'unit-late:auth:lock:10.0.0.4');
  const late = await instance('unit-late:');
  const seconds = late.limiter.lockedFor('10.0.0.4');
  assert.ok(seconds > 50 && seconds <= 60, `locked for ${seconds} s`);
});

test('key prefixes keep deployments apart', async () => {
  const a = await instance('unit-apart-1:');
  const b = await instance('unit-apart-2:');
  for (let i = 0; i < 4; i++) a.limiter.recordFailure('10.0.0.5', LIMITS, `guess-${i}`);
  await waitUntil(() => a.limiter.lockedFor('10.0.0.5') > 0, 'lock on a');
  await lockInRedis(a, 'unit-apart-1:auth:lock:10.0.0.5');
  assert.equal(await b.shared.commands.exists('unit-apart-2:auth:lock:10.0.0.5'), 0, "not under b's prefix");
  assert.equal(b.limiter.lockedFor('10.0.0.5'), 0);
  const inA = await a.dedupe.claim('wake', 'same-key', undefined, limits(60_000));
  const inB = await b.dedupe.claim('wake', 'same-key', undefined, limits(60_000));
  assert.ok(inA && 'claim' in inA && inB && 'claim' in inB, 'the same key claimed in each');
});

test('dedupe: one claim wins; the other waits and gets its first answer', async () => {
  const a = await instance('unit-dedupe:');
  const b = await instance('unit-dedupe:');
  const first = await a.dedupe.claim('wake', 'delivery-1', undefined, limits(60_000));
  assert.ok(first && 'claim' in first);
  const second = b.dedupe.claim('wake', 'delivery-1', undefined, limits(60_000));
  await waitUntil(() => b.scriptAnswers.length >= 2, 'b looking again at the pending key');
  first.claim.settle({ at: 1234, status: 200, body: { ok: true, mode: 'now' } });
  assert.deepEqual(await second, { answer: { at: 1234, status: 200, body: { ok: true, mode: 'now' } } });
  // Later duplicates get it at once; another scope is another key.
  assert.deepEqual(await a.dedupe.claim('wake', 'delivery-1', undefined, limits(60_000)), {
    answer: { at: 1234, status: 200, body: { ok: true, mode: 'now' } },
  });
  const other = await a.dedupe.claim('agent', 'delivery-1', undefined, limits(60_000));
  assert.ok(other && 'claim' in other);
});

test('dedupe: a released claim records nothing, and the waiting instance takes the key over', async () => {
  const a = await instance('unit-release:');
  const b = await instance('unit-release:');
  const first = await a.dedupe.claim('wake', 'delivery-2', undefined, limits(60_000));
  assert.ok(first && 'claim' in first);
  const second = b.dedupe.claim('wake', 'delivery-2', undefined, limits(60_000));
  await waitUntil(() => b.scriptAnswers.length >= 2, 'b looking again at the pending key');
  first.claim.release();
  const got = await second;
  assert.ok(got && 'claim' in got, 'the retry is processed');
  got.claim.settle({ at: 1, status: 204 });
  assert.deepEqual(await a.dedupe.claim('wake', 'delivery-2', undefined, limits(60_000)), {
    answer: { at: 1, status: 204 },
  });
});

test('dedupe: the answer expires with the window', async () => {
  const a = await instance('unit-window:');
  const first = await a.dedupe.claim('wake', 'delivery-3', undefined, limits(200));
  assert.ok(first && 'claim' in first);
  first.claim.settle({ at: 1, status: 204 });
  await a.scriptsDone();
  assert.ok(await a.dedupe.claim('wake', 'delivery-3', undefined, limits(200)).then((r) => r && 'answer' in r));
  // Redis expiring the answer is the event; the window is what is tested, so this waits for it.
  await waitUntil(async () => (await a.shared.commands.exists('unit-window:dedupe:4:wake:delivery-3')) === 0, 'expiry');
  const again = await a.dedupe.claim('wake', 'delivery-3', undefined, limits(200));
  assert.ok(again && 'claim' in again);
});

test('a value that is neither a claim nor an answer is unreadable: refused, logged by scope only', async () => {
  const a = await instance('unit-garbage:');
  const id = (key: string) => `unit-garbage:dedupe:4:wake:${key}`;
  await a.shared.commands.set(id('delivery-4'), '{"status":"x"}');
  await a.shared.commands.set(id('delivery-5'), '{"at":1,"status":9999}');
  await a.shared.commands.set(id('delivery-6'), 'not json secret-payload-canary');
  for (const key of ['delivery-4', 'delivery-5', 'delivery-6', 'delivery-4']) {
    assert.deepEqual(await a.dedupe.claim('wake', key, undefined, limits(60_000)), { unreadable: true }, key);
  }
  const warned = a.log.lines.filter((l) => /unreadable/.test(l.msg));
  assert.equal(warned.length, 1, 'at most one line a minute per scope');
  assert.deepEqual(warned[0]!.fields, { scope: 'wake', count: 1 });
  assert.ok(!JSON.stringify(a.log.lines).includes('delivery-'), 'no key material');
  assert.ok(!JSON.stringify(a.log.lines).includes('canary'), 'no value');
});

test('a pending claim without an expiry (planted, or left by an older version) is taken over at once', async () => {
  const a = await instance('unit-planted:');
  await a.shared.commands.set('unit-planted:dedupe:4:wake:k', 'Pplanted-without-expiry');
  await a.shared.commands.set('unit-planted:dedupe:4:wake:long', 'Plong', 'PX', 60_000);
  const t = Date.now();
  for (const key of ['k', 'long']) {
    const got = await a.dedupe.claim('wake', key, undefined, limits(60_000));
    assert.ok(got && 'claim' in got, key);
    got.claim.settle({ at: 5, status: 204 });
  }
  assert.ok(Date.now() - t < 1000, 'no wait');
});

test('a claim is a short lease, renewed while its request is in flight; a dead holder frees the key', async () => {
  const a = await instance('unit-lease:');
  const b = await instance('unit-lease:');
  const id = 'unit-lease:dedupe:4:wake:long-request';
  const held = await a.dedupe.claim('wake', 'long-request', undefined, limits(60_000));
  assert.ok(held && 'claim' in held);
  const ttls: number[] = [await a.shared.commands.pttl(id)];
  assert.ok(ttls[0]! > 0 && ttls[0]! <= 3000, `lease of ${ttls[0]} ms`);
  // Renewed: the expiry goes up again while the request runs (it would lapse within the lease).
  for (;;) {
    const ttl = await a.shared.commands.pttl(id);
    if (ttl > ttls.at(-1)!) break;
    assert.ok(ttl > 0, `the claim lapsed unrenewed (${ttls.join(', ')})`);
    ttls.push(ttl);
    await new Promise((r) => setTimeout(r, 50));
  }
  const waiting = b.dedupe.claim('wake', 'long-request', undefined, limits(60_000));
  held.claim.settle({ at: 7, status: 200, body: { ok: true } });
  assert.deepEqual(await waiting, { answer: { at: 7, status: 200, body: { ok: true } } });
  // A holder that died mid-request (its lease never renewed) frees the key within one lease.
  await a.shared.commands.set('unit-lease:dedupe:4:wake:orphan', 'Pdead-instance:', 'PX', 2000);
  const taken = await b.dedupe.claim('wake', 'orphan', undefined, limits(60_000));
  assert.ok(taken && 'claim' in taken, 'taken over once the lease lapsed');
  taken.claim.release();
});

test('another body under a key: refused across instances, whether the first is done or in flight', async () => {
  const a = await instance('unit-reuse:');
  const b = await instance('unit-reuse:');
  const one = bodyHashOf(Buffer.from('{"n":1}'));
  const two = bodyHashOf(Buffer.from('{"n":2}'));
  const first = await a.dedupe.claim('agent', 'k', one, limits(60_000));
  assert.ok(first && 'claim' in first);
  assert.deepEqual(await b.dedupe.claim('agent', 'k', two, limits(60_000)), { reused: true });
  first.claim.settle({ at: 9, status: 202, body: { ok: true, runId: 'r' } });
  assert.deepEqual(await b.dedupe.claim('agent', 'k', two, limits(60_000)), { reused: true });
  assert.deepEqual(await b.dedupe.claim('agent', 'k', one, limits(60_000)), {
    answer: { at: 9, status: 202, body: { ok: true, runId: 'r' } },
  });
  const stored = JSON.parse((await a.shared.commands.get('unit-reuse:dedupe:5:agent:k'))!);
  assert.equal(stored.bodyHash, one.hex);
});

test('on Redis each scope holds at most maxKeys answers: a flood drops its own oldest, not others', async () => {
  const a = await instance('unit-bound:');
  const small = { windowMs: 60_000, maxKeys: 5 };
  for (const [scope, n] of [
    ['agent', 2],
    ['mapping:flood', 40],
  ] as const) {
    for (let i = 0; i < n; i++) {
      const got = await a.dedupe.claim(scope, `k${i}`, undefined, small);
      assert.ok(got && 'claim' in got);
      got.claim.settle({ at: Date.now() + i, status: 204 });
    }
  }
  // Answers are stored without being awaited; this instance's next command runs after them.
  const keys = async (pattern: string) => (await a.shared.commands.keys(pattern)).length;
  const flood = await a.shared.commands.keys('unit-bound:dedupe:13:mapping:flood:*');
  assert.deepEqual(flood.map((k) => k.split(':').at(-1)).sort(), ['k35', 'k36', 'k37', 'k38', 'k39']);
  assert.equal(await keys('unit-bound:dedupe:5:agent:*'), 2);
  assert.ok((await a.shared.commands.pttl('unit-bound:dedupe-index:13:mapping:flood')) > 0, 'the index expires too');
});

test('Redis down at start: local state, one warning, and shared once it is there', async () => {
  const later = await startRedis();
  await later.kill();
  const a = await instance('unit-start:', later.url, false);
  let attempts = 0;
  a.shared.commands.on('reconnecting', () => attempts++);
  assert.equal(a.shared.up, false);
  assert.equal(a.log.count('warn', /unavailable/), 1);
  // Requests go on without waiting for Redis: the claim settles before any I/O could have been
  // waited for (the next turn of the event loop), and the local lock is decided on the spot.
  const nextTurn = new Promise((resolve) => setImmediate(() => resolve('waited')));
  assert.equal(await Promise.race([a.dedupe.claim('wake', 'k', undefined, limits(60_000)), nextTurn]), undefined);
  assert.equal(a.limiter.recordFailure('10.0.0.6', { ...LIMITS, maxFailures: 1 }, 'x'), 60, 'local lock');
  await waitUntil(() => attempts >= 3, 'three more attempts to connect');
  assert.equal(a.log.count('warn', /unavailable/), 1, 'one warning, not one per attempt');
  await later.start();
  await waitUntil(() => a.shared.up, 'back on Redis', 5000);
  assert.equal(a.log.count('info', /is back/), 1);
  const b = await instance('unit-start:', later.url);
  for (let i = 0; i < 4; i++) b.limiter.recordFailure('10.0.0.7', LIMITS, `guess-${i}`);
  await waitUntil(() => a.limiter.lockedFor('10.0.0.7') > 0, 'a lock from b reaches a');
  for (const s of open.splice(-2)) s.close();
  await later.stop();
});

// ---------------------------------------------------------------------------
// hooks.sharedState in the config

const resolveShared = (sharedState: unknown): HooksSettings =>
  resolveHooksConfig(
    selectStandaloneConfig({ hooks: { enabled: true, token: 'config-test-token-0123', sharedState } }),
    '/etc/hookgate',
    '/etc/hookgate/gateway.json5',
  );

function configProblems(sharedState: unknown): string {
  try {
    resolveShared(sharedState);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  return assert.fail('expected a ConfigError');
}

test('sharedState: the URL from the environment, the default prefix', () => {
  process.env.HOOKGATE_UNIT_REDIS = 'redis://:pw@10.1.2.3:6380/2';
  try {
    assert.deepEqual(resolveShared({ redis: '${HOOKGATE_UNIT_REDIS}' }).sharedState, {
      url: 'redis://:pw@10.1.2.3:6380/2',
      keyPrefix: 'hookgate:',
    });
  } finally {
    delete process.env.HOOKGATE_UNIT_REDIS;
  }
  assert.equal(resolveShared({ redis: 'rediss://r.example:6379', keyPrefix: 'eu:' }).sharedState?.keyPrefix, 'eu:');
  assert.equal(resolveShared(undefined).sharedState, undefined);
});

test('sharedState: problems name the key and never quote the URL', () => {
  assert.match(configProblems({ redis: '${HOOKGATE_UNIT_UNSET}' }), /hooks\.sharedState\.redis: environment variable/);
  const bad = configProblems({ redis: 'http://user:secret-pw@host' });
  assert.match(bad, /hooks\.sharedState\.redis must be a redis:\/\/ or rediss:\/\/ URL/);
  assert.ok(!bad.includes('secret-pw'));
  assert.match(configProblems({ redis: 'not a url secret-pw' }), /hooks\.sharedState\.redis must be/);
  assert.match(configProblems({}), /sharedState/);
  assert.match(configProblems({ redis: 'redis://h', keyPrefix: 'has space' }), /keyPrefix/);
  assert.match(configProblems({ redis: 'redis://h', extra: 1 }), /sharedState/);
});
