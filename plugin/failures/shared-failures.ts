// The failure book on the queue's Redis (hooks.queue): every instance, door or assistant, lists,
// dismisses and replays the same failures, whichever assistant recorded them. Under the queue's
// prefix and name (`<prefix>failures:<name>:`):
//   view     hash id → the failure as listed (JSON, with its seq, share and size), small to scan
//   action   hash id → its stored action (JSON): read only by a replay, never by a list
//   order    sorted set of ids by seq: the list's order and its `before` cursor
//   open:<share>, closed:<share>   sorted sets per hook: who gives up what past a bound
//   count, bytes   hashes share → its failures and their text; total: all the text
// A hash and sorted sets rather than a stream: a failure changes state (dismissed, replayed) in place
// and is read by id, and eviction takes one hook's oldest, not the stream's oldest. Each change is
// one Lua script, so two instances never see half of one (nor replay one failure twice). The bounds
// are the local book's (failures.ts), kept fairly per hook in the same order.
//
// A failure recorded while Redis is away is not lost: it waits in <stateDir>/failures-outbox.jsonl
// (memory without a state dir) and is pushed once Redis answers again, tried every few seconds.
// The keys are built inside the scripts from the prefix: one Redis, not a cluster.
import type { GatewayHost } from '../host.ts';
import { refuse } from '../errors.ts';
import { script } from '../redis/redis-script.ts';
import { StateFile } from '../util/state-file.ts';
import type { ActionQueue } from '../queue/action-queue.ts';
import { withScores } from '../queue/scored-members.ts';
import {
  MAX_FAILURES,
  MAX_FAILURE_TEXT,
  type Failure,
  type FailurePage,
  type FailureQuery,
  type StoredAction,
} from './failures.ts';

/** The queue as the shared book uses it: its keys, and commands answered 503 when Redis is away. */
export type QueueRecords = Pick<ActionQueue, 'key' | 'command' | 'script'>;

/** An action a door acknowledged and an assistant's policies refused: the queue entry as it was. */
export interface RefusedEntry {
  kind: 'queued';
  /** The door's queue entry (JSON): a replay queues it again under a new id. */
  payload: string;
}

/** What a shared failure keeps to replay: a run's or a delivery's action, or a refused entry. */
export type SharedAction = StoredAction | RefusedEntry;

/** A failure on its way to Redis: its view, its action, and whose share it counts in. */
export interface SharedRecord {
  failure: Failure;
  action: SharedAction;
  share: string;
}

/** The answer of a replay's claim: this replay may go on, or an earlier one's run answers it. */
export type ReplayClaim =
  | { claimed: true; action: SharedAction; failure: Failure; undo: () => Promise<void> }
  | { claimed: false; runId: string; failure: Failure };

/** The book's bounds on Redis: the local book's (failures.ts) unless a test gives smaller ones. */
export interface FailureBounds {
  count: number;
  /** Text kept across all failures, roughly in characters. */
  text: number;
}

/** What a record costs besides its text (as the local book counts it). */
const RECORD_OVERHEAD = 512;
/** Ids read per round trip when a list scans. */
const SCAN_CHUNK = 500;
/** How often failures waiting in the outbox are pushed again. */
const PUSH_EVERY_MS = 5000;

// Shared by the scripts: a failure taken out of every structure (its view decoded), or nil.
const UNLINK = `
local P = ARGV[1]
local function unlink(id)
  local raw = redis.call('HGET', P..'view', id)
  if not raw then return nil end
  local v = cjson.decode(raw)
  redis.call('HDEL', P..'view', id)
  redis.call('HDEL', P..'action', id)
  redis.call('ZREM', P..'order', id)
  redis.call('ZREM', P..'open:'..v.share, id)
  redis.call('ZREM', P..'closed:'..v.share, id)
  if redis.call('HINCRBY', P..'count', v.share, -1) <= 0 then redis.call('HDEL', P..'count', v.share) end
  if redis.call('HINCRBY', P..'bytes', v.share, -v.size) <= 0 then redis.call('HDEL', P..'bytes', v.share) end
  redis.call('DECRBY', P..'total', v.size)
  return v
end
local function close(v, id)
  redis.call('ZREM', P..'open:'..v.share, id)
  redis.call('ZADD', P..'closed:'..v.share, redis.call('INCR', P..'closedSeq'), id)
end
`;

// ARGV: prefix, id, view, action, share, size, max count, max bytes. The same failure pushed again
// (a retried push) changes nothing; one last tried later (its run ended again) is open again, in
// its place. Returns the open failures evicted to keep the bounds.
const RECORD = script(`${UNLINK}
local id = ARGV[2]
local v = cjson.decode(ARGV[3])
local old = redis.call('HGET', P..'view', id)
if old then
  local o = cjson.decode(old)
  if o.lastAt >= v.lastAt then return 0 end
  unlink(id)
  v.seq = o.seq
  v.firstAt = o.firstAt
else
  v.seq = redis.call('INCR', P..'seq')
end
v.share = ARGV[5]
v.size = tonumber(ARGV[6])
redis.call('HSET', P..'view', id, cjson.encode(v))
redis.call('HSET', P..'action', id, ARGV[4])
redis.call('ZADD', P..'order', v.seq, id)
redis.call('ZADD', P..'open:'..v.share, v.seq, id)
redis.call('HINCRBY', P..'count', v.share, 1)
redis.call('HINCRBY', P..'bytes', v.share, v.size)
redis.call('INCRBY', P..'total', v.size)
local dropped = 0
while true do
  local n = redis.call('ZCARD', P..'order')
  local overText = tonumber(redis.call('GET', P..'total') or '0') > tonumber(ARGV[8]) and n > 1
  if n <= tonumber(ARGV[7]) and not overText then break end
  local shares = redis.call('HGETALL', overText and P..'bytes' or P..'count')
  local largest, most = nil, -1
  for i = 1, #shares, 2 do
    local x = tonumber(shares[i + 1])
    if x > most then largest, most = shares[i], x end
  end
  if not largest then break end
  local victim = redis.call('ZRANGE', P..'closed:'..largest, 0, 0)[1] or redis.call('ZRANGE', P..'open:'..largest, 0, 0)[1]
  if not victim then break end
  local gone = unlink(victim)
  if gone.state == 'open' then dropped = dropped + 1 end
end
return dropped`);

// ARGV: prefix, id. The failure as it is now (JSON), or nil for an unknown id.
const DISMISS = script(`${UNLINK}
local raw = redis.call('HGET', P..'view', ARGV[2])
if not raw then return nil end
local v = cjson.decode(raw)
if v.state ~= 'open' then return raw end
v.state = 'dismissed'
close(v, ARGV[2])
raw = cjson.encode(v)
redis.call('HSET', P..'view', ARGV[2], raw)
return raw`);

// ARGV: prefix, id, the new run's id, again ('1'). Replayed before and not again: the earlier run.
// Else the failure is replayed by the new run from now on, and its action comes back with what it
// was before (an undo puts that back when the replay could not be queued).
const CLAIM = script(`${UNLINK}
local raw = redis.call('HGET', P..'view', ARGV[2])
if not raw then return nil end
local v = cjson.decode(raw)
if v.replayedBy and ARGV[4] ~= '1' then return {'prior', raw} end
local before = cjson.encode({ state = v.state, replayedBy = v.replayedBy })
v.state = 'replayed'
v.replayedBy = ARGV[3]
close(v, ARGV[2])
raw = cjson.encode(v)
redis.call('HSET', P..'view', ARGV[2], raw)
return {'claimed', raw, redis.call('HGET', P..'action', ARGV[2]), before}`);

// ARGV: prefix, id, the run whose claim is undone, the state before it (JSON).
const UNCLAIM = script(`${UNLINK}
local raw = redis.call('HGET', P..'view', ARGV[2])
if not raw then return 0 end
local v = cjson.decode(raw)
if v.replayedBy ~= ARGV[3] then return 0 end
local before = cjson.decode(ARGV[4])
v.state = before.state
v.replayedBy = before.replayedBy
if v.state == 'open' then
  redis.call('ZREM', P..'closed:'..v.share, ARGV[2])
  redis.call('ZADD', P..'open:'..v.share, v.seq, ARGV[2])
end
redis.call('HSET', P..'view', ARGV[2], cjson.encode(v))
return 1`);

interface Listed extends Failure {
  seq: number;
  share?: string;
  size?: number;
}

function isSharedRecord(value: unknown): value is SharedRecord {
  const r = value as Partial<SharedRecord> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.share === 'string' &&
    typeof r.failure === 'object' &&
    r.failure !== null &&
    typeof r.failure.id === 'string' &&
    typeof r.action === 'object' &&
    r.action !== null
  );
}

function sizeOf(action: SharedAction): number {
  const text = action.kind === 'run' ? action.prompt : action.kind === 'delivery' ? action.text : action.payload;
  return text.length + RECORD_OVERHEAD;
}

/** A failure's fields in the order the local book lists them (Lua's JSON keeps no order). */
const FIELDS: readonly (keyof Failure)[] = [
  'id',
  'kind',
  'runId',
  'requestId',
  'hook',
  'agentId',
  'channel',
  'to',
  'attempts',
  'lastError',
  'firstAt',
  'lastAt',
  'state',
  'replayedBy',
];

/** The view as the admin API shows it: without the book's own fields (seq, share, size). */
function shown(raw: string): { failure: Failure; seq: number } {
  const listed = JSON.parse(raw) as Listed;
  const failure: Record<string, unknown> = {};
  for (const field of FIELDS) if (listed[field] !== undefined) failure[field] = listed[field];
  return { failure: failure as unknown as Failure, seq: listed.seq };
}

export class SharedFailures {
  readonly #prefix: string;
  #pushing: Promise<void> | undefined;
  readonly #timer: NodeJS.Timeout;

  private constructor(
    private readonly queue: QueueRecords,
    private readonly outbox: StateFile<SharedRecord>,
    private readonly logger: GatewayHost['logger'],
    private readonly bounds: FailureBounds,
  ) {
    this.#prefix = `${queue.key('failures')}:`;
    this.#timer = setInterval(() => void this.push(), PUSH_EVERY_MS);
    this.#timer.unref();
  }

  /** `outboxPath` undefined: what waits for Redis is kept in memory only. */
  static async open(
    queue: QueueRecords,
    outboxPath: string | undefined,
    logger: GatewayHost['logger'],
    bounds: FailureBounds = { count: MAX_FAILURES, text: MAX_FAILURE_TEXT },
    /** A refused action's only copy, before its entry is confirmed: synced as storage.fsync says. */
    sync?: GatewayHost['fileSync'],
  ): Promise<SharedFailures> {
    const outbox = await StateFile.open(outboxPath, isSharedRecord, logger, { sync });
    const shared = new SharedFailures(queue, outbox, logger, bounds);
    // What an earlier process could not push.
    if (outbox.size) void shared.push();
    return shared;
  }

  /** A failure recorded here: into the outbox first (durable), then to Redis when it answers. */
  async record(record: SharedRecord): Promise<void> {
    await this.outbox.put(record.failure.id, record);
    await this.push();
  }

  /** Failures waiting in the outbox, now. */
  get waiting(): number {
    return this.outbox.size;
  }

  /** Pushes what waits in the outbox, oldest first; one push at a time, the next after it. */
  push(): Promise<void> {
    if (this.#pushing) return this.#pushing.then(() => this.push());
    if (this.outbox.size === 0) return Promise.resolve();
    const run = this.#pushAll().finally(() => {
      this.#pushing = undefined;
    });
    this.#pushing = run;
    return run;
  }

  async #pushAll(): Promise<void> {
    for (const [id, record] of [...this.outbox.records]) {
      let dropped: unknown;
      try {
        dropped = await this.queue.script(
          'a failure pushed',
          RECORD,
          [],
          [
            this.#prefix,
            id,
            JSON.stringify(record.failure),
            JSON.stringify(record.action),
            record.share,
            sizeOf(record.action),
            this.bounds.count,
            this.bounds.text,
          ],
        );
      } catch {
        // Redis is away (the queue logs the outage once): tried again on the next round.
        return;
      }
      // Another record under this id meanwhile (the same run's failure again): pushed next round.
      if (this.outbox.get(id) === record) await this.outbox.remove(id).catch(() => {});
      if (typeof dropped === 'number' && dropped > 0)
        this.logger.warn('open failures dropped: the failure book is full', { count: dropped });
    }
  }

  async get(id: string): Promise<Failure | undefined> {
    const raw = await this.queue.command('the failure', 'HGET', `${this.#prefix}view`, id);
    return typeof raw === 'string' ? shown(raw).failure : undefined;
  }

  /** The action a replay queues; undefined for an unknown id. */
  async actionOf(id: string): Promise<SharedAction | undefined> {
    const raw = await this.queue.command('the failure', 'HGET', `${this.#prefix}action`, id);
    return typeof raw === 'string' ? (JSON.parse(raw) as SharedAction) : undefined;
  }

  /** Newest first, as the local book pages (the cursor is the seq of the page's last failure). */
  async page(q: FailureQuery): Promise<FailurePage> {
    const failures: Failure[] = [];
    let lastSeq = 0;
    let max = q.before !== undefined ? `(${q.before}` : '+inf';
    for (;;) {
      const reply = await this.queue.command(
        'the failures',
        'ZREVRANGEBYSCORE',
        `${this.#prefix}order`,
        max,
        '-inf',
        'WITHSCORES',
        'LIMIT',
        0,
        SCAN_CHUNK,
      );
      const scored = withScores(reply);
      if (scored.length === 0) return { failures };
      const views = await this.#views(scored.map(([id]) => id));
      for (const raw of views) {
        if (raw === null) continue;
        const { failure, seq } = shown(raw);
        if (q.state === 'open' && failure.state !== 'open') continue;
        if (q.hook !== undefined && failure.hook !== q.hook) continue;
        if (failures.length === q.limit) return { failures, before: String(lastSeq) };
        failures.push(failure);
        lastSeq = seq;
      }
      max = `(${scored[scored.length - 1]![1]}`;
    }
  }

  /** Open failures last tried at or after `sinceMs`, of one hook if named; oldest first. */
  async openSince(sinceMs: number, hook?: string): Promise<Failure[]> {
    const out: Failure[] = [];
    for (let from = 0; ; from += SCAN_CHUNK) {
      const ids = (await this.queue.command(
        'the failures',
        'ZRANGE',
        `${this.#prefix}order`,
        from,
        from + SCAN_CHUNK - 1,
      )) as string[];
      if (ids.length === 0) return out;
      for (const raw of await this.#views(ids)) {
        if (raw === null) continue;
        const { failure } = shown(raw);
        if (failure.state !== 'open' || Date.parse(failure.lastAt) < sinceMs) continue;
        if (hook === undefined || failure.hook === hook) out.push(failure);
      }
    }
  }

  /** Open failures by the hook whose share they count in (failures.ts's openByHook, every instance's). */
  async openByHook(): Promise<Map<string, number>> {
    const counts = (await this.queue.command('the failures', 'HKEYS', `${this.#prefix}count`)) as string[];
    const out = new Map<string, number>();
    const open = await Promise.all(
      counts.map((share) => this.queue.command('the failures', 'ZCARD', `${this.#prefix}open:${share}`)),
    );
    counts.forEach((share, i) => {
      if (Number(open[i]) > 0) out.set(share, Number(open[i]));
    });
    return out;
  }

  /** Throws 404 for an unknown id; a failure already closed stays as it is. */
  async dismiss(id: string): Promise<Failure> {
    const raw = await this.queue.script('the dismissal', DISMISS, [], [this.#prefix, id]);
    if (typeof raw !== 'string') throw refuse.notFound('no such failure');
    return shown(raw).failure;
  }

  /**
   * Claims a failure's replay for `runId` in one step on Redis: of two instances asking at once, one
   * claims it and the other is answered with its run. 404 for an unknown id.
   */
  async claimReplay(id: string, runId: string, again: boolean): Promise<ReplayClaim> {
    const reply = (await this.queue.script('the replay', CLAIM, [], [this.#prefix, id, runId, again ? '1' : '0'])) as
      [string, string, string?, string?] | null;
    if (!reply) throw refuse.notFound('no such failure');
    const { failure } = shown(reply[1]);
    if (reply[0] === 'prior') return { claimed: false, runId: failure.replayedBy!, failure };
    const before = reply[3]!;
    return {
      claimed: true,
      failure,
      action: JSON.parse(reply[2]!) as SharedAction,
      undo: async () => {
        await this.queue.script('the replay', UNCLAIM, [], [this.#prefix, id, runId, before]);
      },
    };
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#pushing;
    await this.outbox.close();
  }

  async #views(ids: string[]): Promise<(string | null)[]> {
    if (ids.length === 0) return [];
    return (await this.queue.command('the failures', 'HMGET', `${this.#prefix}view`, ...ids)) as (string | null)[];
  }
}

/** The share a failure counts in: the hook that accepted its run, else its name (failures.ts). */
export function shareOf(failure: Failure, action: SharedAction): string {
  return (action.kind !== 'queued' ? action.hookId : undefined) ?? failure.hook;
}
