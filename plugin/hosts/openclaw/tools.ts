// Agent tools: the assistant asks hookgate itself what its hooks are and what came in, answered by the
// same functions as the standalone gateway's admin API (hooksStatus, recentRequests, see service.ts);
// the tools of "After the 200" (failures, replay, pause) are in admin-tools.ts.
// The request log holds no payloads, tokens or signatures, so nothing secret reaches the model.
import type { RequestsQuery } from '../../host-kit.ts';
import { OUTCOMES } from '../../kits/admin.ts';
import { ADMIN_TOOL_NAMES, adminTools, toolCall } from './admin-tools.ts';
import type { AgentTool, OpenClawPluginApi } from './api.ts';
import { answer, notRunning, type ToolState } from './tool-result.ts';

export type { ToolState };

/** The tool names, as declared under contracts.tools in openclaw.plugin.json. */
export const TOOL_NAMES = ['hookgate_status', 'hookgate_recent', ...ADMIN_TOOL_NAMES] as const;
/** A hook's pause as the admin API's GET hooks lists it. */
interface HookPause {
  name: string;
  paused: boolean;
  held: number;
}

/** Requests hookgate_recent answers when asked for no limit: enough for a morning, small for a model. */
const RECENT_DEFAULT = 20;

/** The arguments of hookgate_recent, checked: a model may send anything (the limit is checked with the log). */
function recentQuery(params: unknown): RequestsQuery {
  const p = (params ?? {}) as Record<string, unknown>;
  const limit = p.limit === undefined ? RECENT_DEFAULT : p.limit;
  if (typeof limit !== 'number') throw new Error('limit must be a whole number from 1 to 1000');
  if (p.hook !== undefined && (typeof p.hook !== 'string' || !p.hook.trim()))
    throw new Error('hook must be a hook name');
  const time = (name: 'since' | 'until'): number | undefined => {
    if (p[name] === undefined) return undefined;
    const ms = typeof p[name] === 'string' ? Date.parse(p[name]) : NaN;
    if (Number.isNaN(ms)) throw new Error(`${name} must be an ISO 8601 time, e.g. 2026-11-25T06:00:00Z`);
    return ms;
  };
  const text = (name: 'code' | 'client'): string | undefined => {
    if (p[name] === undefined) return undefined;
    if (typeof p[name] !== 'string' || !p[name].trim()) throw new Error(`${name} must be a non-empty string`);
    return p[name].trim();
  };
  if (p.outcome !== undefined && !(OUTCOMES as readonly unknown[]).includes(p.outcome))
    throw new Error(`outcome must be one of ${OUTCOMES.join(', ')}`);
  const query: RequestsQuery = { limit };
  if (typeof p.hook === 'string') query.hook = p.hook.trim();
  if (p.outcome !== undefined) query.outcome = p.outcome as RequestsQuery['outcome'];
  const code = text('code');
  if (code !== undefined) query.code = code;
  const client = text('client');
  if (client !== undefined) query.client = client;
  const sinceMs = time('since');
  if (sinceMs !== undefined) query.sinceMs = sinceMs;
  const untilMs = time('until');
  if (untilMs !== undefined) query.untilMs = untilMs;
  return query;
}

export function hookgateTools(state: ToolState): AgentTool[] {
  return [
    {
      name: 'hookgate_status',
      label: 'hookgate status',
      description:
        'Webhook ingress (hookgate): whether hooks are enabled, their base path, every hook (wake, agent and ' +
        'each mapping with its path, action, how senders are admitted and whether it is paused with how many ' +
        'actions it holds), and counts of recent requests and runs.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      execute: async (_id, _params) => {
        const running = state.running();
        if (!running) return notRunning(state);
        const status = running.status();
        // Pauses as GET /hookgate/api/hooks shows them.
        const { body } = await running.admin(toolCall('GET', ['hooks']));
        const pauses = new Map(((body as { hooks?: HookPause[] }).hooks ?? []).map((h) => [h.name, h]));
        const hooks = status.hooks.map((h) => ({
          ...h,
          paused: pauses.get(h.id)?.paused ?? false,
          held: pauses.get(h.id)?.held ?? 0,
        }));
        return answer({ running: true, ...status, hooks });
      },
    },
    {
      name: 'hookgate_recent',
      label: 'hookgate recent requests',
      description:
        'The latest webhook requests hookgate received, oldest first: time, path, the mapping that owned it, the ' +
        'HTTP status and refusal code, size, idempotency key and whether it was a duplicate. No payloads. Use it ' +
        'to answer whether a hook fired and what happened (2xx: accepted; 4xx/5xx: refused, with the code).',
      parameters: {
        type: 'object',
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'How many (newest); default 20.' },
          hook: { type: 'string', description: 'Only this hook: a mapping id (e.g. "github"), "wake" or "agent".' },
          since: { type: 'string', description: 'Only requests at or after this ISO 8601 time.' },
          until: { type: 'string', description: 'Only requests before this ISO 8601 time.' },
          outcome: {
            type: 'string',
            enum: [...OUTCOMES],
            description: 'Only this outcome: 2xx (accepted), 4xx, 5xx, duplicate, held (hook paused) or ignored.',
          },
          code: { type: 'string', description: 'Only requests refused with this error code, e.g. unauthorized.' },
          client: { type: 'string', description: 'Only requests from this client address.' },
        },
        additionalProperties: false,
      },
      // A bad argument rejects: OpenClaw hands the message back to the model.
      execute: (_id, params) =>
        Promise.resolve().then(async () => {
          const running = state.running();
          if (!running) return notRunning(state);
          return answer({ running: true, requests: await running.recent(recentQuery(params)) });
        }),
    },
    ...adminTools(state),
  ];
}

export function registerTools(api: OpenClawPluginApi, state: ToolState): void {
  if (!api.registerTool) return;
  for (const tool of hookgateTools(state)) api.registerTool(tool);
}
