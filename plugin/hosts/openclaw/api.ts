// The part of OpenClaw's plugin API (openclaw 2026.9.x) this host uses, typed here so the project
// type-checks without the openclaw package installed. Only members we call are listed.
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface OpenClawLogger {
  debug?(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface HttpRoute {
  path: string;
  auth: 'gateway' | 'plugin';
  match?: 'exact' | 'prefix';
  /** Resolves true when the request was answered; false lets the gateway go on (404). */
  handler(req: IncomingMessage, res: ServerResponse): Promise<boolean | void> | boolean | void;
}

export interface ServiceContext {
  stateDir: string;
  logger: OpenClawLogger;
}

export interface Service {
  id: string;
  start(ctx: ServiceContext): void | Promise<void>;
  stop?(ctx: ServiceContext): void | Promise<void>;
}

/** How the gateway reacts to a change under each config prefix (longest prefix wins). */
export interface ReloadPolicy {
  restartPrefixes?: string[];
  hotPrefixes?: string[];
  noopPrefixes?: string[];
}

export interface SubagentRunParams {
  sessionKey: string;
  message: string;
  model?: string;
  deliver?: boolean;
  idempotencyKey?: string;
}

export type TerminalReply =
  { disposition: 'visible'; text: string } | { disposition: 'silent' } | { disposition: 'empty'; code?: string };

export interface AgentWaitResult {
  status: 'ok' | 'timeout' | 'error' | 'pending';
  error?: string;
  terminalReply?: TerminalReply;
}

export interface OutboundAdapter {
  sendText?(ctx: { cfg: unknown; to: string; text: string; accountId?: string | null }): Promise<unknown> | unknown;
}

/** A session row: where the conversation last talked to someone. */
export interface SessionEntry {
  deliveryContext?: { channel?: string; to?: string };
  lastChannel?: string;
  lastTo?: string;
  /** The thinking level the session's turns use unless a turn says otherwise. */
  thinkingLevel?: string;
}

export interface OpenClawRuntime {
  config?: { current(): unknown };
  system: {
    enqueueSystemEvent(text: string, options: { sessionKey: string; agentId?: string }): boolean;
    requestHeartbeat(request: {
      source: 'hook';
      intent: 'immediate' | 'event';
      reason?: string;
      agentId?: string;
      sessionKey?: string;
    }): void;
  };
  subagent: {
    run(params: SubagentRunParams): Promise<{ runId: string; sessionKey?: string }>;
    waitForRun(params: { runId: string; timeoutMs?: number }): Promise<AgentWaitResult>;
    /** Ends a session; a run of it in progress stops (its model request is aborted). */
    deleteSession?(params: { sessionKey: string; deleteTranscript?: boolean }): Promise<void>;
  };
  channel?: { outbound?: { loadAdapter(id: string): Promise<OutboundAdapter | undefined> } };
  agent?: {
    session?: {
      getSessionEntry(params: { agentId?: string; sessionKey: string }): SessionEntry | undefined;
      /** Changes a session's stored entry; fallbackEntry is used when the session does not exist yet. */
      patchSessionEntry?(params: {
        agentId?: string;
        sessionKey: string;
        fallbackEntry?: { sessionId: string; updatedAt: number; pluginOwnerId?: string };
        update(entry: SessionEntry): Partial<SessionEntry> | null;
      }): Promise<SessionEntry | null>;
    };
  };
}

export interface ToolResult {
  content: { type: 'text'; text: string }[];
  details: Record<string, unknown>;
}

/** An agent tool (api.registerTool); its name must be declared under contracts.tools in the manifest. */
export interface AgentTool {
  name: string;
  label: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  execute(toolCallId: string, params: unknown, signal?: AbortSignal): Promise<ToolResult>;
}

export interface OpenClawPluginApi {
  id: string;
  /** 'full' is the live activation; other modes only collect metadata. */
  registrationMode?: string;
  /** The gateway config as loaded at registration. */
  config: unknown;
  /** plugins.entries.<id>.config as loaded at registration. */
  pluginConfig?: Record<string, unknown>;
  runtime: OpenClawRuntime;
  logger: OpenClawLogger;
  registerHttpRoute(route: HttpRoute): void;
  registerService(service: Service): void;
  registerReload?(policy: ReloadPolicy): void;
  registerTool?(tool: AgentTool): void;
}

export interface PluginEntryOptions {
  id: string;
  name: string;
  description?: string;
  reload?: ReloadPolicy;
  register(api: OpenClawPluginApi): void;
}
