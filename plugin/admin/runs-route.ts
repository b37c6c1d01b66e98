// `GET runs`: the run book's list (plugin/runs/run-book.ts), paged with `before` and filtered by
// status and hook, the same in every host. With the queue on Redis (hooks.queue), the list of every
// instance's runs from their states on Redis (runs/shared-run-states.ts); this instance's own book
// while Redis is away. A run's own page (`runs/<id>`) is the host's, which adds
// what it keeps (the reply's text in the standalone gateway) to the book's summary.
import { refuse } from '../errors.ts';
import type { RunStatus } from '../host.ts';
import { RUN_STATUSES, type RunBook } from '../runs/run-book.ts';
import type { SharedRunStates } from '../runs/shared-run-states.ts';
import type { AdminCall, AdminRoute } from './admin-call.ts';

export const DEFAULT_RUNS_LIMIT = 100;
export const RUNS_PAGE_MAX = 1000;
const PARAMETERS = new Set(['limit', 'before', 'status', 'hook']);

function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw refuse.badRequest(`give ${name} at most once`);
  return values[0];
}

export function runsRoute(book: RunBook, shared?: Pick<SharedRunStates, 'list'>): AdminRoute {
  return (call: AdminCall) => {
    if (call.parts.length !== 1 || call.parts[0] !== 'runs') return undefined;
    return Promise.resolve().then(() => {
      if (call.method !== 'GET') throw refuse.methodNotAllowed('GET', 'the runs are read with GET');
      for (const name of call.query.keys()) {
        if (!PARAMETERS.has(name)) throw refuse.badRequest(`unknown parameter ${JSON.stringify(name.slice(0, 40))}`);
      }
      const limitText = single(call.query, 'limit');
      if (limitText !== undefined && (!/^[1-9][0-9]{0,3}$/.test(limitText) || Number(limitText) > RUNS_PAGE_MAX))
        throw refuse.badRequest(`limit must be a whole number from 1 to ${RUNS_PAGE_MAX}`);
      const before = single(call.query, 'before');
      if (before !== undefined && !/^[1-9][0-9]{0,14}$/.test(before))
        throw refuse.badRequest('before is not a cursor of this list');
      const status = single(call.query, 'status');
      if (status !== undefined && !(RUN_STATUSES as readonly string[]).includes(status))
        throw refuse.badRequest(`status must be one of ${RUN_STATUSES.join(', ')}`);
      const hook = single(call.query, 'hook');
      if (hook !== undefined && (hook === '' || hook.length > 200)) throw refuse.badRequest('hook must be a hook name');
      const query = {
        ...(status !== undefined ? { status: status as RunStatus } : {}),
        ...(hook !== undefined ? { hook } : {}),
      };
      const limit = limitText === undefined ? DEFAULT_RUNS_LIMIT : Number(limitText);
      const cursor = before === undefined ? undefined : Number(before);
      if (!shared) return book.list(query, limit, cursor);
      return shared.list(query, limit, cursor).catch(() => book.list(query, limit, cursor));
    });
  };
}
