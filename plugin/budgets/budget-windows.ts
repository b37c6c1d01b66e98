// Each budget's current window (<stateDir>/budgets.jsonl): when it started, the runs it counted and
// the tokens those runs reported. A window is fixed: it starts with the first run it counts and
// lasts the budget's perSeconds; once over, the next run counted starts a new one. Memory keeps every
// open window (one per budget configured); each change is on disk before the request is answered,
// so a budget spent before a restart is still spent after it.
import type { Logger } from '../host.ts';
import { readStateRecords, StateFile } from '../util/state-file.ts';

export interface BudgetWindow {
  key: string;
  /** ms since the epoch: the first run counted. */
  start: number;
  runs: number;
  tokens: number;
}

function isWindow(value: unknown): value is BudgetWindow {
  const v = value as Partial<BudgetWindow> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.key === 'string' &&
    typeof v.start === 'number' &&
    typeof v.runs === 'number' &&
    typeof v.tokens === 'number'
  );
}

/** The windows a gateway keeps, read without opening its file for writing (the dry run's view). */
export async function readBudgetWindows(path: string): Promise<Map<string, BudgetWindow>> {
  return (await readStateRecords(path, isWindow)).records;
}

export class BudgetWindows {
  readonly #file: StateFile<BudgetWindow>;

  private constructor(file: StateFile<BudgetWindow>) {
    this.#file = file;
  }

  static async open(path: string | undefined, logger: Logger): Promise<BudgetWindows> {
    return new BudgetWindows(await StateFile.open(path, isWindow, logger));
  }

  /** The budget's window open at `now` (it ends `perSeconds` after its start), if any. */
  open(key: string, perSeconds: number, now: number): BudgetWindow | undefined {
    const window = this.#file.get(key);
    return window && now < window.start + perSeconds * 1000 ? window : undefined;
  }

  /** Counts `runs` in the open window, or in one starting now; resolves once it is on disk. */
  count(key: string, perSeconds: number, runs: number, now: number): { window: BudgetWindow; written: Promise<void> } {
    const open = this.open(key, perSeconds, now);
    const window = open ? { ...open, runs: open.runs + runs } : { key, start: now, runs, tokens: 0 };
    return { window, written: this.#file.put(key, window) };
  }

  /** Takes back runs counted for a request that then started none (its window still the same). */
  uncount(key: string, start: number, runs: number): Promise<void> {
    const window = this.#file.get(key);
    if (!window || window.start !== start) return Promise.resolve();
    return this.#file.put(key, { ...window, runs: Math.max(0, window.runs - runs) });
  }

  /** Adds a run's reported tokens to the open window (a window already over keeps what it had). */
  spend(key: string, perSeconds: number, tokens: number, now: number): Promise<void> {
    const open = this.open(key, perSeconds, now);
    if (!open) return Promise.resolve();
    return this.#file.put(key, { ...open, tokens: open.tokens + tokens });
  }

  /** Every window kept (open or over). */
  all(): IterableIterator<BudgetWindow> {
    return this.#file.records.values();
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}
