// Budgets counted across instances (hooks.sharedState), as the rate limits are: a request never waits
// on Redis for its budget. Each instance counts locally (budget-windows.ts) and, every EXCHANGE_MS,
// tells Redis what it counted since the last exchange and hears what every instance counted in the
// window. So a budget may be passed by at most what the instances start between two exchanges.
// Redis keeps, per budget, a hash { start, runs, tokens } expiring at the window's end: the first
// instance to tell a count in a new window sets its start, and every instance adopts it. While Redis
// is down the counts stay local, and what was not told is told when it is back.
import type { SharedRedis } from '../redis/shared-redis.ts';
import { script } from '../redis/redis-script.ts';
import { PeriodicExchange } from '../redis/periodic-exchange.ts';
import type { BudgetWindows, Untold } from './budget-windows.ts';

/**
 * KEYS: one hash per budget. ARGV per key: now, window ms, the window start counted here (0: none),
 * runs and tokens to add. A window over (or none) is started anew at the start told, when something
 * is told (counts told for another window open here go to the shared one); returns per key
 * { start, runs, tokens } (start 0: no window open anywhere).
 */
const EXCHANGE = script(`
local out = {}
local a = 1
for k = 1, #KEYS do
  local now = tonumber(ARGV[a])
  local per = tonumber(ARGV[a + 1])
  local mine = tonumber(ARGV[a + 2])
  local runs = tonumber(ARGV[a + 3])
  local tokens = tonumber(ARGV[a + 4])
  a = a + 5
  local start = tonumber(redis.call('HGET', KEYS[k], 'start') or '0')
  local open = start > 0 and start + per > now
  if not open and mine > 0 and mine + per > now then
    redis.call('DEL', KEYS[k])
    start = mine
    redis.call('HSET', KEYS[k], 'start', start, 'runs', 0, 'tokens', 0)
    redis.call('PEXPIREAT', KEYS[k], start + per)
    open = true
  end
  if open then
    -- Counted here in a window of its own: those runs started while the shared one was open.
    redis.call('HINCRBY', KEYS[k], 'runs', runs)
    redis.call('HINCRBY', KEYS[k], 'tokens', tokens)
    local row = redis.call('HMGET', KEYS[k], 'runs', 'tokens')
    out[k] = { start, tonumber(row[1]) or 0, tonumber(row[2]) or 0 }
  else
    out[k] = { 0, 0, 0 }
  end
end
return out
`);

export class SharedBudgets {
  readonly #exchange: PeriodicExchange;

  constructor(
    private readonly windows: BudgetWindows,
    private readonly redis: SharedRedis,
    /** Every budget of the config in force: its key and window length. */
    private readonly budgets: () => Iterable<{ key: string; perSeconds: number }>,
  ) {
    windows.share();
    this.#exchange = new PeriodicExchange(redis, () => this.#exchangeAll());
  }

  /** One exchange of every budget; skipped while Redis is down or one is under way. */
  exchange(): Promise<void> {
    return this.#exchange.run();
  }

  close(): void {
    this.#exchange.close();
  }

  async #exchangeAll(): Promise<void> {
    const now = Date.now();
    const untold = this.windows.takeUntold();
    const sent: { key: string; told: Untold | undefined }[] = [];
    const keys: string[] = [];
    const args: number[] = [];
    for (const { key, perSeconds } of this.budgets()) {
      const told = untold.get(key);
      // The window counted here, told even when nothing new was counted (it may be the first).
      const open = this.windows.open(key, perSeconds, now);
      const start = told?.start ?? open?.start ?? 0;
      sent.push({ key, told });
      keys.push(this.redis.key(`budget:${key}`));
      args.push(now, perSeconds * 1000, start, told?.runs ?? 0, told?.tokens ?? 0);
    }
    if (!keys.length) return;
    let rows: unknown;
    try {
      rows = await this.redis.script(EXCHANGE, keys, args);
    } catch {
      for (const { key, told } of sent) if (told) this.windows.giveBack(key, told);
      return;
    }
    if (!Array.isArray(rows)) return;
    sent.forEach(({ key }, k) => {
      const row: unknown = rows[k];
      if (!Array.isArray(row)) return;
      const [start, runs, tokens] = row.map(Number) as [number, number, number];
      if ([start, runs, tokens].every(Number.isFinite)) this.windows.heard(key, start, runs, tokens);
    });
  }
}
