// What a hook may spend: a budget of runs and model tokens over a fixed window, and what becomes of a
// request past it (overflow). A hook meets up to two budgets: its own (a mapping's `budget`, or
// hooks.endpoints.agent.budget) and the budget of all hooks together (hooks.budget).

/** digest: kept and listed once per window in the main session; hold: run as the budget frees; refuse: 429. */
export type Overflow = 'digest' | 'hold' | 'refuse';

/** A budget as configured: at least one of `runs` and `tokens`. */
export interface BudgetConfig {
  runs?: number;
  tokens?: number;
  perSeconds: number;
  overflow?: Overflow;
}

/** A budget as a request reads it. */
export interface Budget {
  readonly runs?: number;
  readonly tokens?: number;
  readonly perSeconds: number;
  readonly overflow: Overflow;
}

/** What the budgets room reads of the hooks snapshot. */
export interface BudgetSettings {
  /** hooks.budget: all hooks together. */
  readonly budget?: Budget;
  /** hooks.endpoints.agent.budget. */
  readonly endpointBudgets: { readonly agent?: Budget };
  readonly mappings: readonly { readonly id: string; readonly budget?: Budget }[];
}

/** One budget a hook meets: its key in the state files, the name its digest uses, the limits. */
export interface BudgetRef {
  /** `hook:<id>` for a hook's own budget, `hooks` for all hooks together. */
  readonly key: string;
  /** The hook's id, or `hooks`. */
  readonly name: string;
  readonly budget: Budget;
}

export const ALL_HOOKS = 'hooks';

/** The config's budget with its default overflow; `where` names the key in a config error. */
export function compileBudget(config: BudgetConfig, where: string, problems: string[]): Budget | undefined {
  if (config.runs === undefined && config.tokens === undefined) {
    problems.push(`${where} needs runs or tokens (or both)`);
    return undefined;
  }
  return Object.freeze({
    ...(config.runs !== undefined ? { runs: config.runs } : {}),
    ...(config.tokens !== undefined ? { tokens: config.tokens } : {}),
    perSeconds: config.perSeconds,
    overflow: config.overflow ?? 'digest',
  });
}

/** Each snapshot's mappings by id, made once per snapshot. */
const byIdOf = new WeakMap<BudgetSettings['mappings'], ReadonlyMap<string, Budget | undefined>>();

/** The budgets a hook's runs meet, its own first. */
export function budgetsOf(settings: BudgetSettings, hook: string): BudgetRef[] {
  const out: BudgetRef[] = [];
  const own = hook === 'agent' ? settings.endpointBudgets.agent : mappingBudget(settings, hook);
  if (own) out.push({ key: `hook:${hook}`, name: hook, budget: own });
  if (settings.budget) out.push({ key: ALL_HOOKS, name: ALL_HOOKS, budget: settings.budget });
  return out;
}

function mappingBudget(settings: BudgetSettings, hook: string): Budget | undefined {
  let byId = byIdOf.get(settings.mappings);
  if (!byId) {
    byId = new Map(settings.mappings.map((m) => [m.id, m.budget]));
    byIdOf.set(settings.mappings, byId);
  }
  return byId.get(hook);
}

/** What a budget's window has counted (budget-windows.ts keeps them). */
export interface WindowUse {
  readonly start: number;
  readonly runs: number;
  readonly tokens: number;
}

/**
 * The window's end when `runs` more runs would pass the budget at `now`; undefined when they fit. A
 * window over, or one that counted nothing yet, admits any request.
 */
export function overBudget(
  budget: Budget,
  window: WindowUse | undefined,
  runs: number,
  now: number,
): number | undefined {
  if (!window || window.runs === 0) return undefined;
  const endsAt = window.start + budget.perSeconds * 1000;
  if (now >= endsAt) return undefined;
  const over =
    (budget.runs !== undefined && window.runs + runs > budget.runs) ||
    (budget.tokens !== undefined && window.tokens >= budget.tokens);
  return over ? endsAt : undefined;
}

/** `5 runs`, `20000 tokens`, or `5 runs and 20000 tokens`. */
export function limitText(budget: Budget): string {
  const parts: string[] = [];
  if (budget.runs !== undefined) parts.push(`${budget.runs} runs`);
  if (budget.tokens !== undefined) parts.push(`${budget.tokens} tokens`);
  return parts.join(' and ');
}
