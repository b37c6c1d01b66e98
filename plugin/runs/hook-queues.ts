// The run queue, one line per hook and fair between them: the next run to start is the oldest
// waiting run of the hook that started a run least recently (among hooks under their own
// maxConcurrentRuns), so a flood on one hook never delays another hook's next run by more than the
// slot already promised. Each hook's runs start in the order they came.
import type { AgentJob } from '../action.ts';

/** A hook's limit of runs at once (its mapping's or the endpoint's maxConcurrentRuns), if it has one. */
export type HookConcurrency = ReadonlyMap<string, number>;

interface HookLine {
  readonly jobs: AgentJob[];
  running: number;
  /** When it last started a run, in starts counted by the queue (0: never). */
  lastStart: number;
}

/** The hook a run counts under: its hook id, else (runs kept before it was recorded) its name. */
export function hookOf(job: AgentJob): string {
  return job.hookId ?? job.name;
}

export class HookQueues {
  /** Hooks with runs waiting or running; a hook leaves once it has neither. */
  readonly #lines = new Map<string, HookLine>();
  #size = 0;
  #starts = 0;

  /** Runs waiting, of every hook. */
  get size(): number {
    return this.#size;
  }

  push(job: AgentJob): void {
    const hook = hookOf(job);
    let line = this.#lines.get(hook);
    if (!line) this.#lines.set(hook, (line = { jobs: [], running: 0, lastStart: 0 }));
    line.jobs.push(job);
    this.#size++;
  }

  /**
   * The next run to start, counted as running under its hook until ended(); undefined when every
   * hook with runs waiting is at its own limit.
   */
  take(limits: HookConcurrency): AgentJob | undefined {
    let best: HookLine | undefined;
    for (const [hook, line] of this.#lines) {
      if (line.jobs.length === 0 || line.running >= (limits.get(hook) ?? Infinity)) continue;
      if (!best || line.lastStart < best.lastStart) best = line;
    }
    if (!best) return undefined;
    best.running++;
    best.lastStart = ++this.#starts;
    this.#size--;
    return best.jobs.shift();
  }

  /** A run take() gave ended its try: its hook's slot frees. */
  ended(job: AgentJob): void {
    const hook = hookOf(job);
    const line = this.#lines.get(hook);
    if (!line) return;
    line.running--;
    if (line.running <= 0 && line.jobs.length === 0) this.#lines.delete(hook);
  }

  /** Every waiting run, in the order each hook had them; the queue keeps none. */
  drain(): AgentJob[] {
    const out: AgentJob[] = [];
    for (const [hook, line] of this.#lines) {
      out.push(...line.jobs.splice(0));
      if (line.running <= 0) this.#lines.delete(hook);
    }
    this.#size = 0;
    return out;
  }
}
