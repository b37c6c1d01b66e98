// The core's admin routes, tried in order: each returns undefined for a path it does not own.
import type { AdminCall, AdminRoute } from './admin-call.ts';

export function adminRoutes(routes: readonly AdminRoute[]): (call: AdminCall) => Promise<unknown> | undefined {
  return (call) => {
    for (const route of routes) {
      const answer = route(call);
      if (answer !== undefined) return answer;
    }
    return undefined;
  };
}
