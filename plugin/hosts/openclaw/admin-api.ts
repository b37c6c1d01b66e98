// The admin API inside OpenClaw, under /hookgate/api/ behind OpenClaw's gateway auth (OpenClaw checks
// the gateway token before the handler runs): the core's routes (failures, replay, pause) first, then
// the read-only views this host serves. The agent tools ask the same function with the same calls,
// so a tool and the API cannot disagree.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HookError, refuse, writeError, type HooksPlugin } from '../../host-kit.ts';
import type { Logger } from '../../host.ts';
import { AdminAnswer, adminCallOf, writeAdminAnswer, type AdminCall } from '../../kits/admin.ts';
import { errorMessage } from '../../util/errors.ts';
import { ADMIN_PATH } from './identity.ts';
import { RECENT_RUNS, type RecentRuns } from './recent-runs.ts';

const PREFIX = `${ADMIN_PATH}/`;

/** An admin call's answer: its HTTP status (200, or a replay's 202) and its JSON body. */
export interface AdminReply {
  status: number;
  body: unknown;
}

/** Answers one admin call, or throws a HookError. */
export type AdminAsk = (call: AdminCall) => Promise<AdminReply>;

/** What a core route answered: a body (200), or one with its own status (AdminAnswer). */
function replyOf(answer: unknown): AdminReply {
  return answer instanceof AdminAnswer ? { status: answer.status, body: answer.body } : { status: 200, body: answer };
}

/** The views this host serves itself, after the core's routes: each with the method it takes. */
function hostView(call: AdminCall, plugin: HooksPlugin, runs: RecentRuns): (() => unknown) | undefined {
  const { parts } = call;
  if (parts.length === 2 && parts[0] === 'runs')
    return async () => {
      const run = runs.find(parts[1]!);
      if (!run) {
        // Run elsewhere (hooks.queue): its state as its taker wrote it on Redis.
        const shared = await plugin.sharedRun(parts[1]!);
        if (shared) return shared;
        throw refuse.notFound(`no such run among the last ${RECENT_RUNS} of this gateway process`);
      }
      const summary = plugin.runSummary(run.runId);
      if (!summary) return run;
      // The host's record (status, tries) with what the run book adds: hook, request, delivery; and
      // the reply's deliveries in order (a fallback chain reads top to bottom).
      const { hook, requestId, delivery } = summary;
      const deliveries = runs.deliveriesOf(run.runId);
      return {
        ...run,
        hook,
        ...(requestId !== undefined ? { requestId } : {}),
        ...(delivery ? { delivery } : {}),
        ...(deliveries.length ? { deliveries } : {}),
      };
    };
  return undefined;
}

/** `dryRuns`: the dry run's route (kits/dry-run.ts), asked after the plugin's own. */
export function openClawAdmin(
  plugin: HooksPlugin,
  runs: RecentRuns,
  dryRuns: (call: AdminCall) => Promise<unknown> | undefined = () => undefined,
): AdminAsk {
  return async (call) => {
    const core = plugin.admin(call) ?? dryRuns(call);
    if (core !== undefined) return replyOf(await core);
    const view = hostView(call, plugin, runs);
    if (!view) throw refuse.notFound('no such admin endpoint');
    if (call.method !== 'GET') throw refuse.methodNotAllowed('GET', 'this admin endpoint is read-only: use GET');
    return { status: 200, body: await view() };
  };
}

/** The HTTP side: every path under /hookgate/api/ is answered here, errors with the project's bodies. */
export async function answerAdmin(
  ask: AdminAsk,
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
): Promise<boolean> {
  const url = req.url ?? '/';
  if (!url.startsWith(PREFIX)) {
    writeError(res, refuse.notFound('no such admin endpoint'));
    return true;
  }
  await answerAdminCall(ask, req, res, url.slice(PREFIX.length), logger);
  return true;
}

/** Answers `rest` (the path and query after /hookgate/api/): the console's calls come here too. */
export async function answerAdminCall(
  ask: AdminAsk,
  req: IncomingMessage,
  res: ServerResponse,
  rest: string,
  logger: Logger,
): Promise<void> {
  try {
    const { status, body } = await ask(adminCallOf(req, rest));
    // A stream (the live tail) keeps the handler pending until its client goes.
    await writeAdminAnswer(res, status === 200 ? body : new AdminAnswer(status, body));
  } catch (err) {
    if (!(err instanceof HookError)) logger.error('an admin call failed', { reason: errorMessage(err) });
    writeError(res, err instanceof HookError ? err : refuse.internal());
  }
}
