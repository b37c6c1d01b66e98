// The budgets of hooks at work: whether a request's runs fit (counted then), what a request past a
// budget leaves (a digest entry), the tokens a finished run reported, and the window ends: each
// window that refused something is watched until its end, when its digest goes to the main session
// (one event, one heartbeat) and whoever holds runs for a budget is told it may try again.
import path from 'node:path';
import type { GatewayHost } from '../host.ts';
import { NO_METRICS, type HookMetrics } from '../observe/metrics.ts';
import { errorMessage } from '../util/errors.ts';
import { timerDelay } from '../util/time-bounds.ts';
import { budgetsOf, limitText, overBudget, type BudgetRef, type BudgetSettings } from './budget.ts';
import { BudgetWindows } from './budget-windows.ts';
import { Digests, type DigestItem } from './digests.ts';
import { digestText } from './digest-text.ts';
import { DIGEST_SCOPE, onceMark } from '../util/once-marks.ts';
import { crashPoint } from '../util/test-crash-point.ts';

/** The runs fit (and are counted: `undo` takes them back), or the first budget they pass. */
export type BudgetVerdict =
  { ok: true; undo(): void } | { ok: false; over: BudgetRef; windowStart: number; endsAt: number };

/** A digest the host could not take is told again this late. */
const RETRY_DIGEST_MS = 5000;

/** One budget's use in its open window, for GET /api/hooks and /metrics. */
export interface BudgetUse {
  budget: string;
  runs: number;
  tokens: number;
  /** ISO time the window ends; absent when no window is open. */
  windowEndsAt?: string;
  limitRuns?: number;
  limitTokens?: number;
}

export class BudgetBook {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #freeListeners: (() => void)[] = [];
  readonly #delivering = new Set<Promise<void>>();
  #closed = false;

  private constructor(
    private readonly host: Pick<GatewayHost, 'logger' | 'sessions'>,
    private readonly settings: () => BudgetSettings,
    private readonly windows: BudgetWindows,
    readonly digests: Digests,
    private readonly metrics: Pick<HookMetrics, 'digested'>,
  ) {}

  /** Opens <host.stateDir>/budgets.jsonl and digests.jsonl (memory only without a state dir). */
  static async open(
    host: Pick<GatewayHost, 'logger' | 'sessions' | 'stateDir' | 'fileSync'>,
    settings: () => BudgetSettings,
    metrics: Pick<HookMetrics, 'digested'> = NO_METRICS,
  ): Promise<BudgetBook> {
    const file = (name: string): string | undefined =>
      host.stateDir === undefined ? undefined : path.join(host.stateDir, name);
    const [windows, digests] = await Promise.all([
      BudgetWindows.open(file('budgets.jsonl'), host.logger, host.fileSync),
      Digests.open(file('digests.jsonl'), host.logger, host.fileSync),
    ]);
    return new BudgetBook(host, settings, windows, digests, metrics);
  }

  /**
   * Watches the windows whose digests an earlier process left (those already over are told now);
   * one whose event the host had already accepted (`told`, the marks it handed back) is only removed,
   * with the heartbeat it may not have had.
   */
  start(told: ReadonlySet<string> = new Set()): void {
    for (const [id, digest] of this.digests.entries()) {
      if (!told.has(id)) {
        this.#watch(id, digest.windowEnd);
        continue;
      }
      this.host.sessions.requestHeartbeat({ agentId: digest.agentId, reason: `hook:${digest.name}` });
      void this.digests.remove(id).catch((err: unknown) => this.#failed(err));
    }
  }

  /** Told when a window that refused runs ends: held runs may go on. */
  onFree(listener: () => void): void {
    this.#freeListeners.push(listener);
  }

  /** Whether a budget the hook meets holds its overflow: a request then waits behind runs already held. */
  holdsInOrder(hook: string): boolean {
    return budgetsOf(this.settings(), hook).some((ref) => ref.budget.overflow === 'hold');
  }

  /**
   * Whether `runs` more runs of the hook fit every budget it meets; if they do, they are counted at
   * once (and on disk when this resolves). A window that refuses is watched until its end.
   */
  async take(hook: string, runs: number): Promise<BudgetVerdict> {
    const refs = budgetsOf(this.settings(), hook);
    if (!refs.length) return OK;
    const now = Date.now();
    for (const ref of refs) {
      const window = this.#isOver(ref, runs, now);
      if (!window) continue;
      const endsAt = window.start + ref.budget.perSeconds * 1000;
      this.#watch(windowId(ref.key, window.start), endsAt);
      return { ok: false, over: ref, windowStart: window.start, endsAt };
    }
    const counted = refs.map((ref) => ({ ref, ...this.windows.count(ref.key, ref.budget.perSeconds, runs, now) }));
    await Promise.all(counted.map((c) => c.written));
    return {
      ok: true,
      undo: () => {
        for (const { ref, window } of counted)
          void this.windows.uncount(ref.key, window.start, runs).catch((err: unknown) => this.#failed(err));
      },
    };
  }

  /**
   * Keeps a refused request's texts for its window's digest; resolves once they are on disk. A
   * coalesced batch's texts name it (`batch`, its run id): a start knows the batch was digested.
   */
  async digest(
    verdict: Extract<BudgetVerdict, { ok: false }>,
    hook: string,
    agentId: string,
    texts: readonly string[],
    batch?: string,
  ): Promise<void> {
    const { over, windowStart, endsAt } = verdict;
    const id = windowId(over.key, windowStart);
    const items: DigestItem[] = texts.map((text) => ({ hook, text }));
    const fresh = {
      budget: over.key,
      name: over.name,
      windowStart,
      windowEnd: endsAt,
      limit: limitText(over.budget),
      perSeconds: over.budget.perSeconds,
      agentId,
    };
    await this.digests.add(id, fresh, items, batch);
    this.metrics.digested(hook);
    this.#watch(id, endsAt);
  }

  /** A finished run's reported tokens, added to the open windows of the budgets its hook meets. */
  spend(hook: string, tokens: number): void {
    if (!(tokens > 0)) return;
    const now = Date.now();
    for (const ref of budgetsOf(this.settings(), hook)) {
      void this.windows.spend(ref.key, ref.budget.perSeconds, tokens, now).catch((err: unknown) => this.#failed(err));
    }
  }

  /** The use of each budget the hook meets, in its open window. */
  useOf(hook: string): BudgetUse[] {
    const now = Date.now();
    return budgetsOf(this.settings(), hook).map((ref) => {
      const open = this.windows.open(ref.key, ref.budget.perSeconds, now);
      return {
        budget: ref.name,
        runs: open?.runs ?? 0,
        tokens: open?.tokens ?? 0,
        ...(open ? { windowEndsAt: new Date(open.start + ref.budget.perSeconds * 1000).toISOString() } : {}),
        ...(ref.budget.runs !== undefined ? { limitRuns: ref.budget.runs } : {}),
        ...(ref.budget.tokens !== undefined ? { limitTokens: ref.budget.tokens } : {}),
      };
    });
  }

  /** Every budget configured: its key and window length (shared-budgets.ts exchanges them). */
  *keys(): Iterable<{ key: string; perSeconds: number }> {
    for (const { budget, key } of this.#allRefs()) yield { key, perSeconds: budget.perSeconds };
  }

  /** The windows, for sharing them across instances. */
  get sharedWindows(): BudgetWindows {
    return this.windows;
  }

  /** Every budget configured, with its use in the open window (none open: 0). */
  *allUse(): Iterable<{ budget: string; runs: number; tokens: number }> {
    const now = Date.now();
    for (const ref of this.#allRefs()) {
      const open = this.windows.open(ref.key, ref.budget.perSeconds, now);
      yield { budget: ref.key, runs: open?.runs ?? 0, tokens: open?.tokens ?? 0 };
    }
  }

  #allRefs(): BudgetRef[] {
    const settings = this.settings();
    const refs = [
      ...budgetsOf(settings, 'agent'),
      ...settings.mappings.flatMap((m) => (m.budget ? budgetsOf(settings, m.id).slice(0, 1) : [])),
    ];
    const seen = new Set<string>();
    return refs.filter((ref) => !seen.has(ref.key) && seen.add(ref.key));
  }

  /** Stops watching windows (digests not yet told stay on disk for the next start), then closes the files. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    await Promise.allSettled([...this.#delivering]);
    await Promise.all([this.windows.close(), this.digests.close()]);
  }

  /** The open window when `runs` more would pass the budget; an empty window admits any request. */
  #isOver(ref: BudgetRef, runs: number, now: number): { start: number } | undefined {
    const window = this.windows.open(ref.key, ref.budget.perSeconds, now);
    return overBudget(ref.budget, window, runs, now) === undefined ? undefined : window;
  }

  /** At the window's end: its digest told, then those holding runs told the budget freed. */
  #watch(id: string, endsAt: number): void {
    if (this.#closed || this.#timers.has(id)) return;
    const timer = setTimeout(
      () => {
        if (Date.now() < endsAt) {
          // A timer fires early past its longest delay: watch again.
          this.#timers.delete(id);
          return this.#watch(id, endsAt);
        }
        const delivered = this.#deliver(id).finally(() => {
          this.#delivering.delete(delivered);
          if (this.#timers.get(id) === timer) this.#timers.delete(id);
          for (const listener of this.#freeListeners) listener();
        });
        this.#delivering.add(delivered);
      },
      timerDelay(endsAt - Date.now()),
    );
    timer.unref();
    this.#timers.set(id, timer);
  }

  /** The window's digest as one system event and one heartbeat, then forgotten; tried again on failure. */
  async #deliver(id: string): Promise<void> {
    const digest = this.digests.get(id);
    if (!digest) return;
    try {
      const { sessions } = this.host;
      // The mark rides in the event's own durable write: a crash before the removal below leaves
      // the next start knowing the event was accepted.
      await sessions.enqueueSystemEvent(sessions.mainSessionKey(digest.agentId), digestText(digest), {
        source: 'hook',
        hook: digest.name,
        idempotency: onceMark(DIGEST_SCOPE, id),
      });
      crashPoint('digest-told');
      sessions.requestHeartbeat({ agentId: digest.agentId, reason: `hook:${digest.name}` });
      await this.digests.remove(id);
    } catch (err) {
      this.host.logger.error('a budget digest could not be posted; trying again later', {
        budget: digest.name,
        reason: errorMessage(err),
      });
      this.#timers.delete(id);
      this.#watch(id, Date.now() + RETRY_DIGEST_MS);
    }
  }

  #failed(err: unknown): void {
    this.host.logger.error('a budget window could not be written', { reason: errorMessage(err) });
  }
}

const OK: BudgetVerdict = Object.freeze({ ok: true, undo: () => {} });

function windowId(key: string, start: number): string {
  return `${key}@${start}`;
}
