// The admin API of pauses: GET hooks → { hooks: [ { name, paused, held, budgets? } ] } (budgets: the
// use of each budget the hook meets, in its open window);
// POST hooks/<name>/pause and hooks/<name>/resume → { ok: true, name, paused, held }.
import { refuse } from '../errors.ts';
import type { AdminRoute } from './admin-call.ts';
import type { HookPauses } from '../pauses/hook-pauses.ts';
import type { BudgetBook } from '../budgets/budget-book.ts';

/** A name as an error message may quote it: a caller's typing, capped. */
function quoted(name: string): string {
  return JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name);
}

export function hooksRoute(
  pauses: HookPauses,
  setPaused: (name: string, paused: boolean) => Promise<void>,
  budgets?: Pick<BudgetBook, 'useOf'>,
): AdminRoute {
  return (call) => {
    const { parts, method } = call;
    if (parts[0] !== 'hooks') return undefined;
    if (parts.length === 1) {
      if (method !== 'GET') return Promise.reject(refuse.methodNotAllowed('GET', 'the hooks are read with GET'));
      // With the queue the held counts are Redis's: read now, as every instance would.
      return pauses.refresh().then(() => {
        const hooks = pauses.list().map((hook) => {
          const use = budgets?.useOf(hook.name) ?? [];
          return use.length ? { ...hook, budgets: use } : hook;
        });
        return { hooks };
      });
    }
    const [, name, verb] = parts;
    if (parts.length !== 3 || (verb !== 'pause' && verb !== 'resume')) return undefined;
    if (method !== 'POST') return Promise.reject(refuse.methodNotAllowed('POST', `a hook is ${verb}d with POST`));
    return (async () => {
      if (!pauses.knows(name!))
        throw refuse.notFound(`no hook named ${quoted(name!)}: use wake, agent or a mapping id (GET /api/hooks)`);
      await setPaused(name!, verb === 'pause');
      await pauses.refresh();
      return { ok: true, ...pauses.stateOf(name!) };
    })();
  };
}
