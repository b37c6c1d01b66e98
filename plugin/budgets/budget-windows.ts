// Each budget's current window (<stateDir>/budgets.jsonl): when it started, the runs it counted and
// the tokens those runs reported. A window is fixed: it starts with the first run it counts and
// lasts the budget's perSeconds; once over, the next run counted starts a new one. Memory keeps every
// open window (one per budget configured); each change is on disk before the request is answered,
// so a budget spent before a restart is still spent after it.
import type { FileSyncPolicy, Logger } from '../host.ts';
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

/** What this instance counted in a window and has not told the other instances yet (shared-budgets.ts). */
export interface Untold {
  start: number;
  runs: number;
  tokens: number;
}

export class BudgetWindows {
  readonly #file: StateFile<BudgetWindow>;
  /** Per budget: counted here since the last exchange (kept only with hooks.sharedState). */
  #untold: Map<string, Untold> | undefined;

  private constructor(file: StateFile<BudgetWindow>) {
    this.#file = file;
  }

  static async open(path: string | undefined, logger: Logger, sync?: FileSyncPolicy): Promise<BudgetWindows> {
    return new BudgetWindows(await StateFile.open(path, isWindow, logger, { sync }));
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
    this.#note(key, window.start, runs, 0);
    return { window, written: this.#file.put(key, window) };
  }

  /** Takes back runs counted for a request that then started none (its window still the same). */
  uncount(key: string, start: number, runs: number): Promise<void> {
    const window = this.#file.get(key);
    if (!window || window.start !== start) return Promise.resolve();
    this.#note(key, start, -runs, 0);
    return this.#file.put(key, { ...window, runs: Math.max(0, window.runs - runs) });
  }

  /** Adds a run's reported tokens to the open window (a window already over keeps what it had). */
  spend(key: string, perSeconds: number, tokens: number, now: number): Promise<void> {
    const open = this.open(key, perSeconds, now);
    if (!open) return Promise.resolve();
    this.#note(key, open.start, 0, tokens);
    return this.#file.put(key, { ...open, tokens: open.tokens + tokens });
  }

  /** From now on, what is counted here is kept to be told to the other instances. */
  share(): void {
    this.#untold ??= new Map();
  }

  /** What was counted here since the last call, per budget; forgotten here (give it back if not told). */
  takeUntold(): Map<string, Untold> {
    const untold = this.#untold ?? new Map<string, Untold>();
    if (this.#untold) this.#untold = new Map();
    return untold;
  }

  /** Counts that could not be told: told with the next exchange. */
  giveBack(key: string, told: Untold): void {
    if (told.runs !== 0 || told.tokens !== 0) this.#note(key, told.start, told.runs, told.tokens);
  }

  /**
   * What every instance counted in the budget's window, as Redis holds it: the window becomes it,
   * plus what was counted here since (not told yet). A window no instance has open is left alone.
   */
  heard(key: string, start: number, runs: number, tokens: number): void {
    if (start <= 0) return;
    const untold = this.#untold?.get(key);
    const mine = untold?.start === start ? untold : undefined;
    const window = { key, start, runs: runs + (mine?.runs ?? 0), tokens: tokens + (mine?.tokens ?? 0) };
    const kept = this.#file.get(key);
    if (kept && kept.start === window.start && kept.runs === window.runs && kept.tokens === window.tokens) return;
    void this.#file.put(key, window).catch(() => {});
  }

  #note(key: string, start: number, runs: number, tokens: number): void {
    if (!this.#untold) return;
    const untold = this.#untold.get(key);
    // Counts of a window since replaced are of no use to the others.
    if (untold && untold.start === start) {
      untold.runs += runs;
      untold.tokens += tokens;
    } else this.#untold.set(key, { start, runs, tokens });
  }

  /** Every window kept (open or over). */
  all(): IterableIterator<BudgetWindow> {
    return this.#file.records.values();
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}
