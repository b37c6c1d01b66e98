// Agent tools over the admin API of "After the 200": each builds the AdminCall the HTTP API under
// /hookgate/api/ would and asks the same function (RunningHookgate.admin), so a tool and the API
// cannot disagree. A replay needs `confirm: true`; without it the tool says what it would replay.
import type { HookError } from '../../host-kit.ts';
import type { AdminCall } from '../../kits/admin.ts';
import type { AgentTool } from './api.ts';
import { ADMIN_PATH } from './identity.ts';
import { answer, notRunning, type ToolState } from './tool-result.ts';

export const ADMIN_TOOL_NAMES = ['hookgate_failures', 'hookgate_replay', 'hookgate_pause', 'hookgate_resume'] as const;
/** The most failures a preview of a replay looks through (one page of the API). */
const PREVIEW_PAGE = 1000;

type Params = Record<string, unknown>;

/** A call as the HTTP API builds it from `<method> /hookgate/api/<parts>?<query>` and its JSON body. */
export function toolCall(method: string, parts: readonly string[], query: Params = {}, body?: unknown): AdminCall {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) q.set(key, String(value));
  return { method, parts, query: q, body: () => Promise.resolve(body) };
}

/** How the call reads on the wire, for the model and its owner. */
function described(call: AdminCall): string {
  const q = call.query.toString();
  return `${call.method} ${ADMIN_PATH}/${call.parts.map(encodeURIComponent).join('/')}${q ? `?${q}` : ''}`;
}

/** A HookError, told by its shape: the entry (which loads this file) imports nothing of the core. */
function isRefusal(err: unknown): err is HookError {
  return (
    err instanceof Error &&
    typeof (err as Partial<HookError>).code === 'string' &&
    typeof (err as Partial<HookError>).status === 'number'
  );
}

/** Asks the running plugin; its refusals come back to the model as one clear sentence. */
async function ask(state: ToolState, tool: string, call: AdminCall): Promise<unknown> {
  const running = state.running();
  if (!running) throw new Error(`${tool}: ${notRunning(state).details.reason as string}`);
  try {
    return (await running.admin(call)).body;
  } catch (err) {
    if (!isRefusal(err)) throw err;
    if (err.code === 'not_found' && err.message === 'no such admin endpoint')
      throw new Error(`${tool}: this hookgate has no ${described(call)} (its version does not serve it)`, {
        cause: err,
      });
    throw new Error(`${tool}: ${err.message} (${err.code})`, { cause: err });
  }
}

function text(p: Params, key: string, what: string): string | undefined {
  const v = p[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !v.trim() || v.length > 200) throw new Error(`${key} must be ${what}`);
  return v.trim();
}

function flag(p: Params, key: string): boolean {
  const v = p[key];
  if (v !== undefined && typeof v !== 'boolean') throw new Error(`${key} must be true or false`);
  return v === true;
}

function isoTime(p: Params, key: string): string | undefined {
  const v = text(p, key, 'an ISO 8601 time, e.g. 2026-11-25T06:00:00Z');
  if (v !== undefined && Number.isNaN(Date.parse(v)))
    throw new Error(`${key} must be an ISO 8601 time, e.g. 2026-11-25T06:00:00Z`);
  return v;
}

const params = (raw: unknown): Params => (raw && typeof raw === 'object' ? (raw as Params) : {});

/** The replay a hookgate_replay call asks for: exactly one of runId, failureId or failed. */
function replayCall(p: Params): AdminCall {
  const runId = text(p, 'runId', 'a run id');
  const failureId = text(p, 'failureId', 'a failure id');
  const failed = flag(p, 'failed');
  if ([runId, failureId, failed || undefined].filter((x) => x !== undefined).length !== 1)
    throw new Error('give exactly one of runId, failureId or failed: true');
  const again = flag(p, 'again') ? { again: 1 } : {};
  if (runId) return toolCall('POST', ['runs', runId, 'replay'], again);
  if (failureId) return toolCall('POST', ['failures', failureId, 'replay'], again);
  const since = isoTime(p, 'since');
  if (!since) throw new Error('failed: true needs since, an ISO 8601 time (replays what failed since then)');
  const hook = text(p, 'hook', 'a hook name');
  return toolCall('POST', ['replay'], {}, { failed: true, since, ...(hook ? { hook } : {}) });
}

interface FailureEntry {
  id?: unknown;
  hook?: unknown;
  lastAt?: unknown;
  state?: unknown;
}

/** What a replay would touch, read through the same API without changing anything. */
async function replayPreview(state: ToolState, call: AdminCall, p: Params): Promise<unknown> {
  const tool = 'hookgate_replay';
  if (call.parts[0] === 'runs') return { run: await ask(state, tool, toolCall('GET', ['runs', call.parts[1]!])) };
  const page = (await ask(
    state,
    tool,
    toolCall('GET', ['failures'], { limit: PREVIEW_PAGE, state: call.parts[0] === 'failures' ? 'all' : 'open' }),
  )) as { failures?: FailureEntry[] };
  const failures = page.failures ?? [];
  if (call.parts[0] === 'failures') {
    const failure = failures.find((f) => f.id === call.parts[1]);
    return failure ? { failure } : { failure: null, note: 'not among the latest failures' };
  }
  const since = Date.parse(p.since as string);
  const matching = failures.filter(
    (f) => (p.hook === undefined || f.hook === p.hook) && Date.parse(String(f.lastAt)) >= since,
  );
  return { failures: matching.length, failureIds: matching.map((f) => f.id) };
}

export function adminTools(state: ToolState): AgentTool[] {
  const hookParam = {
    type: 'string',
    description: 'The hook: "wake", "agent" or a mapping id (e.g. "github").',
  };
  const pauseTool = (name: 'hookgate_pause' | 'hookgate_resume', verb: 'pause' | 'resume'): AgentTool => ({
    name,
    label: `hookgate ${verb}`,
    description:
      verb === 'pause'
        ? 'Pauses a webhook: its requests are still checked and answered 202 held, and what they ask for waits on ' +
          'disk until hookgate_resume. Use it when the owner wants a noisy sender stopped for a while.'
        : 'Resumes a paused webhook: what it held runs in arrival order.',
    parameters: { type: 'object', properties: { hook: hookParam }, required: ['hook'], additionalProperties: false },
    execute: async (_id, raw) => {
      const hook = text(params(raw), 'hook', 'a hook name: "wake", "agent" or a mapping id');
      if (!hook) throw new Error('hook is required: "wake", "agent" or a mapping id');
      return answer({
        running: true,
        ...((await ask(state, name, toolCall('POST', ['hooks', hook, verb]))) as object),
      });
    },
  });
  return [
    {
      name: 'hookgate_failures',
      label: 'hookgate failures',
      description:
        'Webhook runs and reply deliveries that failed for good after their retries (dead letters), newest ' +
        'first: hook, run id, attempts, the last error, and whether each was replayed or dismissed. No payloads.',
      parameters: {
        type: 'object',
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'How many; default the API’s.' },
          before: { type: 'string', description: 'The cursor of the previous page ("before" of its answer).' },
          all: { type: 'boolean', description: 'Also the replayed and dismissed ones (default: open only).' },
          hook: { type: 'string', description: 'Only this hook.' },
        },
        additionalProperties: false,
      },
      execute: async (_id, raw) => {
        const p = params(raw);
        if (
          p.limit !== undefined &&
          (!Number.isInteger(p.limit) || (p.limit as number) < 1 || (p.limit as number) > 1000)
        )
          throw new Error('limit must be a whole number from 1 to 1000');
        const query = {
          limit: p.limit,
          before: text(p, 'before', 'a cursor from an earlier answer'),
          state: flag(p, 'all') ? 'all' : 'open',
          hook: text(p, 'hook', 'a hook name'),
        };
        return answer({
          running: true,
          ...((await ask(state, 'hookgate_failures', toolCall('GET', ['failures'], query))) as object),
        });
      },
    },
    {
      name: 'hookgate_replay',
      label: 'hookgate replay',
      description:
        'Runs a failed webhook run or delivery again as a new run, with today’s policies. Give exactly one of runId, ' +
        'failureId, or failed: true with since (and optionally hook) for all open failures since then. Without ' +
        'confirm: true it only says what it would replay; ask the owner before confirming.',
      parameters: {
        type: 'object',
        properties: {
          runId: { type: 'string', description: 'Replay this run.' },
          failureId: { type: 'string', description: 'Replay this failure (from hookgate_failures).' },
          failed: { type: 'boolean', description: 'Replay every open failure since `since`.' },
          since: { type: 'string', description: 'With failed: an ISO 8601 time.' },
          hook: { type: 'string', description: 'With failed: only this hook.' },
          again: { type: 'boolean', description: 'Replay even if it was replayed before.' },
          confirm: { type: 'boolean', description: 'true to replay; otherwise nothing is done.' },
        },
        additionalProperties: false,
      },
      execute: async (_id, raw) => {
        const p = params(raw);
        const call = replayCall(p);
        if (flag(p, 'confirm'))
          return answer({ running: true, ...((await ask(state, 'hookgate_replay', call)) as object) });
        const body = await call.body();
        return answer({
          running: true,
          replayed: false,
          reason: 'nothing was replayed: call again with confirm: true to replay',
          wouldCall: described(call),
          ...(body !== undefined ? { body } : {}),
          ...((await replayPreview(state, call, p)) as object),
        });
      },
    },
    pauseTool('hookgate_pause', 'pause'),
    pauseTool('hookgate_resume', 'resume'),
  ];
}
