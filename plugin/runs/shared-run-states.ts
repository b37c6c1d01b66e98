// Run states on the queue's Redis (hooks.queue), so `GET /api/runs/<id>` and `GET /api/runs` answer
// on every instance: the door writes "queued" once Redis has the action (its runs' ids are chosen
// there), and the taker writes each state its run book notes (running, retrying, ok, error, timeout,
// tries, reply kind, delivery) as the run book's summary: never the prompt nor the reply's text.
// Under `<prefix>runs:<name>:`: `run:<runId>` the summary (JSON) for RUN_STATE_TTL_SECONDS after its
// last change, `recent` a sorted set of run ids by first sight (the list's order and cursor) cut to
// the run book's size, `seq` its counter. A write lost while Redis is away is not tried again: the
// run's next change writes its whole state. The door's "queued" never overwrites a taker's state.
import type { AgentJob } from '../action.ts';
import { script } from '../redis/redis-script.ts';
import type { ActionQueue } from '../queue/action-queue.ts';
import { withScores } from '../queue/scored-members.ts';
import { RUN_BOOK_SIZE, type RunSummary, type RunsQuery } from './run-book.ts';

/** How long a run's state stays on Redis after its last change: a day. */
export const RUN_STATE_TTL_SECONDS = 24 * 60 * 60;
/** Run ids read per round trip when a list scans. */
const SCAN_CHUNK = 200;

// ARGV: prefix, run id, summary, ttl, only if new ('1'), runs kept in the list.
const NOTE = script(`
local P = ARGV[1]
local k = P..'run:'..ARGV[2]
if ARGV[5] == '1' and redis.call('EXISTS', k) == 1 then return 0 end
if not redis.call('ZSCORE', P..'recent', ARGV[2]) then
  redis.call('ZADD', P..'recent', redis.call('INCR', P..'seq'), ARGV[2])
  redis.call('ZREMRANGEBYRANK', P..'recent', 0, -(tonumber(ARGV[6]) + 1))
end
redis.call('SET', k, ARGV[3], 'EX', tonumber(ARGV[4]))
return 1`);

/** The queue as the run states use it. */
export type RunStateRecords = Pick<ActionQueue, 'key' | 'command' | 'script'>;

export class SharedRunStates {
  readonly #prefix: string;

  constructor(private readonly queue: RunStateRecords) {
    this.#prefix = `${queue.key('runs')}:`;
  }

  /** The door queued these runs: "queued" until a taker writes otherwise. */
  queued(hook: string, requestId: string | undefined, jobs: readonly AgentJob[]): void {
    const now = new Date().toISOString();
    for (const job of jobs) {
      const summary: RunSummary = {
        runId: job.runId,
        hook,
        name: job.name,
        status: 'queued',
        agentId: job.agentId,
        sessionKey: job.sessionKey,
        ...(requestId !== undefined ? { requestId } : {}),
        at: now,
        updatedAt: now,
      };
      this.#write(summary, true);
    }
  }

  /** A state the taker's run book noted (its whole summary). */
  noted(summary: RunSummary | undefined): void {
    if (summary) this.#write(summary, false);
  }

  /** A run's state as its taker last wrote it; undefined when unknown, expired, or Redis is away. */
  async get(runId: string): Promise<RunSummary | undefined> {
    try {
      const raw = await this.queue.command('the run', 'GET', `${this.#prefix}run:${runId}`);
      return typeof raw === 'string' ? (JSON.parse(raw) as RunSummary) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The run book's list (run-book.ts) over every instance's runs: the newest `limit` passing the
   * query, older than the cursor, oldest first; `before` when more. Throws 503 when Redis is away.
   */
  async list(query: RunsQuery, limit: number, before?: number): Promise<{ runs: RunSummary[]; before?: string }> {
    const found: { run: RunSummary; seq: number }[] = [];
    let older = false;
    let max = before !== undefined ? `(${before}` : '+inf';
    scan: for (;;) {
      const reply = await this.queue.command(
        'the runs',
        'ZREVRANGEBYSCORE',
        `${this.#prefix}recent`,
        max,
        '-inf',
        'WITHSCORES',
        'LIMIT',
        0,
        SCAN_CHUNK,
      );
      const page = withScores(reply);
      if (page.length === 0) break;
      const ids = page.map(([id]) => id);
      const raws = (await this.queue.command('the runs', 'MGET', ...ids.map((id) => `${this.#prefix}run:${id}`))) as (
        string | null
      )[];
      for (let i = 0; i < ids.length; i++) {
        const raw = raws[i];
        if (raw === null || raw === undefined) continue;
        const run = JSON.parse(raw) as RunSummary;
        if (query.status !== undefined && run.status !== query.status) continue;
        if (query.hook !== undefined && run.hook !== query.hook) continue;
        if (found.length === limit) {
          older = true;
          break scan;
        }
        found.push({ run, seq: Number(page[i]![1]) });
      }
      max = `(${page[page.length - 1]![1]}`;
    }
    found.reverse();
    const runs = found.map((f) => f.run);
    return older && found.length ? { runs, before: String(found[0]!.seq) } : { runs };
  }

  #write(summary: RunSummary, onlyIfNew: boolean): void {
    void this.queue
      .script(
        'the run state',
        NOTE,
        [],
        [
          this.#prefix,
          summary.runId,
          JSON.stringify(summary),
          RUN_STATE_TTL_SECONDS,
          onlyIfNew ? '1' : '0',
          RUN_BOOK_SIZE,
        ],
      )
      .catch(() => {});
  }
}
