// An in-memory GatewayHost that records every call, for driving the core over real HTTP in tests.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createHooksPlugin, type HooksPlugin } from '../../plugin/index.ts';
import { HookError, refuse, writeError } from '../../plugin/host-kit.ts';
import { adminCallOf, writeAdminAnswer } from '../../plugin/kits/admin.ts';
import { dryRunRoute } from '../../plugin/kits/dry-run.ts';
import type {
  AcceptedRun,
  ChannelName,
  Delivery,
  ReplyHistory,
  SendResult,
  GatewayHost,
  IdempotencyRecord,
  IsolatedTurn,
  LogFields,
  Route,
  RunRecord,
  SystemEventMeta,
  TurnResult,
} from '../../plugin/host.ts';
import { tempDir } from './temp-dir.ts';

export const HOOK_TOKEN = 'hook-secret-token-0123456789';
export const GATEWAY_TOKEN = 'gateway-secret-token-abcdef';

export interface Recorded {
  events: { sessionKey: string; text: string; meta: SystemEventMeta }[];
  heartbeats: { agentId: string; reason: string }[];
  turns: IsolatedTurn[];
  deliveries: Delivery[];
  runUpdates: RunRecord[];
  logs: { level: string; msg: string; fields?: LogFields }[];
}

export interface TestHostOptions {
  hooks?: Record<string, unknown>;
  gateway?: Record<string, unknown>;
  agents?: { id: string; default?: boolean }[];
  models?: string[];
  timeoutSeconds?: number;
  channels?: ChannelName[];
  lastRoute?: Route;
  /** Replaces the default turn (which replies "reply to: <prompt>"). */
  turn?: (turn: IsolatedTurn) => Promise<TurnResult>;
  /** What one try at a reply comes to (default: sent); it may settle later. */
  send?: (d: Delivery) => Promise<SendResult>;
  /** host.replies.firstTryInRun: the run waits for its reply's first try (as in OpenClaw). */
  firstTryInRun?: boolean;
  /** host.replies.history: told of each reply and each change of its state. */
  replyHistory?: ReplyHistory;
  /** Awaited before a system event is recorded: a test may hold the wake's action there. */
  systemEvent?: (text: string) => Promise<void>;
  /** Called after each run update is recorded; what it returns is what the host answers. */
  runUpdate?: (r: RunRecord) => void | Promise<void>;
  /** Files to write under the config dir before the plugin starts, e.g. transforms. */
  files?: Record<string, string>;
  /** Runs an earlier process accepted, handed back at start (runs.restore). */
  restoreRuns?: { rerun: AcceptedRun[]; interrupted: AcceptedRun[] };
  /** Idempotency keys an earlier process kept, handed back at start (idempotency.restore). */
  restoreKeys?: IdempotencyRecord[];
  /** host.stateDir: where the core keeps what must outlive the process (retry schedules). */
  stateDir?: string;
  /** host.secrets: the host's credentials, which the core masks in what peers send back. */
  secrets?: string[];
}

export interface TestGateway {
  url: string;
  rec: Recorded;
  plugin: HooksPlugin;
  host: GatewayHost;
  configPath: string;
  /** Resolves when `count` run updates with a final status have been recorded. */
  finalRuns(count: number, timeoutMs?: number): Promise<RunRecord[]>;
  /** Resolves with the final run update of `runId` once it has been recorded. */
  finalRun(runId: string, timeoutMs?: number): Promise<RunRecord>;
  close(): Promise<void>;
}

const FINAL = new Set(['ok', 'error', 'timeout']);

/** An accepted run as a host hands it back at start (runs.restore). */
export function acceptedRun(runId: string, name: string): AcceptedRun {
  return {
    runId,
    name,
    agentId: 'main',
    sessionKey: 'agent:main:hook:ingress',
    prompt: `prompt of ${name}`,
    timeoutMs: 30_000,
    wakeMode: 'next-heartbeat',
    deliver: false,
    channel: 'last',
  };
}

export async function startTestGateway(opts: TestHostOptions = {}): Promise<TestGateway> {
  const dir = await tempDir('hookgate-test-');
  const configPath = path.join(dir, 'gateway.json5');
  const file = {
    gateway: { auth: { token: GATEWAY_TOKEN }, ...opts.gateway },
    hooks: { enabled: true, token: HOOK_TOKEN, ...opts.hooks },
  };
  await writeFile(configPath, JSON.stringify(file, null, 2));
  for (const [rel, content] of Object.entries(opts.files ?? {})) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }

  const rec: Recorded = { events: [], heartbeats: [], turns: [], deliveries: [], runUpdates: [], logs: [] };
  const waiters: (() => void)[] = [];
  const agents = opts.agents ?? [{ id: 'main', default: true }, { id: 'ops' }];
  const host: GatewayHost = {
    logger: {
      info: (msg, fields) => rec.logs.push({ level: 'info', msg, fields }),
      warn: (msg, fields) => rec.logs.push({ level: 'warn', msg, fields }),
      error: (msg, fields) => rec.logs.push({ level: 'error', msg, fields }),
    },
    configPath,
    configDir: dir,
    ...(opts.stateDir ? { stateDir: opts.stateDir } : {}),
    agents: {
      list: agents,
      defaultId: agents.find((a) => a.default)?.id ?? agents[0]!.id,
      models: opts.models,
      timeoutSeconds: opts.timeoutSeconds,
    },
    channels: opts.channels ?? ['telegram', 'slack'],
    sessions: {
      mainSessionKey: (agentId) => `agent:${agentId}:main`,
      enqueueSystemEvent: async (sessionKey, text, meta) => {
        await opts.systemEvent?.(text);
        rec.events.push({ sessionKey, text, meta });
      },
      requestHeartbeat: (r) => {
        rec.heartbeats.push(r);
      },
      lastRoute: () => opts.lastRoute,
    },
    runs: {
      runIsolatedTurn: async (turn) => {
        rec.turns.push(turn);
        return opts.turn ? opts.turn(turn) : { status: 'ok', reply: `reply to: ${turn.prompt.length} chars` };
      },
      onRunUpdate: (r) => {
        rec.runUpdates.push({ ...r });
        for (const w of waiters.splice(0)) w();
        return opts.runUpdate?.(r);
      },
      ...(opts.restoreRuns ? { restore: () => Promise.resolve(opts.restoreRuns!) } : {}),
    },
    replies: {
      send: (d) => {
        rec.deliveries.push(d);
        return opts.send ? opts.send(d) : Promise.resolve({ status: 'sent', messageIds: [] });
      },
      ...(opts.firstTryInRun ? { firstTryInRun: true } : {}),
      ...(opts.replyHistory ? { history: opts.replyHistory } : {}),
    },
    ...(opts.restoreKeys ? { idempotency: { restore: () => Promise.resolve(opts.restoreKeys!) } } : {}),
    ...(opts.secrets ? { secrets: () => opts.secrets! } : {}),
  };

  const plugin = await createHooksPlugin(host);
  const server: Server = createServer((req, res) => {
    // The core's admin routes under /api/, as a host serves them (this test host asks for no token).
    if (req.url?.startsWith('/api/')) {
      void serveAdmin(plugin, host, req, res);
      return;
    }
    void plugin.handle(req, res).then((handled) => {
      // Like OpenClaw's route admission, a host may take a settled handle() as the end of the answer.
      if (handled && !res.writableEnded) {
        res.statusCode = 500;
        res.end('host: handle() settled before the answer was written');
      } else if (!handled) {
        res.statusCode = 404;
        res.setHeader('content-type', 'text/plain');
        res.end('host 404');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    rec,
    plugin,
    host,
    configPath,
    finalRuns(count, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(
          () => reject(new Error(`only ${done().length} of ${count} runs finished`)),
          timeoutMs,
        );
        const done = () => rec.runUpdates.filter((r) => FINAL.has(r.status));
        const check = () => {
          if (done().length >= count) {
            clearTimeout(deadline);
            resolve(done());
          } else waiters.push(check);
        };
        check();
      });
    },
    finalRun(runId, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const find = () => rec.runUpdates.find((r) => r.runId === runId && FINAL.has(r.status));
        const deadline = setTimeout(() => reject(new Error(`run ${runId} did not finish`)), timeoutMs);
        const check = () => {
          const found = find();
          if (found) {
            clearTimeout(deadline);
            resolve(found);
          } else waiters.push(check);
        };
        check();
      });
    },
    async close() {
      await plugin.close(100);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function serveAdmin(
  plugin: HooksPlugin,
  host: GatewayHost,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const call = adminCallOf(req, req.url!.slice('/api/'.length));
    const answer = plugin.admin(call) ?? dryRunRoute(plugin, host)(call);
    if (answer === undefined) throw refuse.notFound('no such admin endpoint');
    await writeAdminAnswer(res, await answer);
  } catch (err) {
    writeError(res, err instanceof HookError ? err : refuse.internal());
  }
}

/** Runs fn against a fresh gateway and always closes it. */
export async function withGateway(opts: TestHostOptions, fn: (gw: TestGateway) => Promise<void>): Promise<void> {
  const gw = await startTestGateway(opts);
  try {
    await fn(gw);
  } finally {
    await gw.close();
  }
}

export interface PostOptions {
  token?: string | null;
  headers?: Record<string, string>;
  method?: string;
  rawBody?: string;
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** POSTs JSON with the hook token as a Bearer header unless told otherwise. */
export async function post(base: string, p: string, body?: unknown, o: PostOptions = {}): Promise<JsonResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...o.headers };
  const token = o.token === undefined ? HOOK_TOKEN : o.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const method = o.method ?? 'POST';
  const res = await fetch(base + p, {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : (o.rawBody ?? JSON.stringify(body ?? {})),
  });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed };
}

/** A call to one of the core's admin routes (`method` and `path` as after `/api/`), without HTTP. */
export function coreAdmin(gw: TestGateway, method: string, path: string): Promise<any> {
  const answer = gw.plugin.admin({
    method,
    parts: path.split('/'),
    query: new URLSearchParams(),
    body: () => Promise.resolve(undefined),
  });
  if (!answer) throw new Error(`${path} is not a core route`);
  return answer;
}
