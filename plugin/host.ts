// The one door between the plugin core and the gateway it runs in. The core never imports a host;
// each host (standalone, OpenClaw, the tests' recording host) builds one of these and hands HTTP
// requests to the plugin's handle(), which resolves once the answer has been handed to the socket
// (answers are written together once per turn of the event loop; see http/answers.ts). What a host
// may use of the core besides this is in host-kit.ts and kits/.

export const CHANNEL_ORDER = [
  'whatsapp',
  'telegram',
  'discord',
  'slack',
  'mattermost',
  'signal',
  'imessage',
  'msteams',
] as const;
export type ChannelName = (typeof CHANNEL_ORDER)[number];

export type LogFields = Record<string, string | number | boolean | undefined>;

/** Never handed raw payloads or tokens. */
export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export interface AgentInfo {
  id: string;
  default?: boolean;
}

/** Read on every request, so a host may replace the values when its own config changes. */
export interface HostAgents {
  list: readonly AgentInfo[];
  defaultId: string;
  /** agents.defaults.models: the model allowlist; undefined means not enforced. */
  models?: readonly string[];
  /** agents.defaults.timeoutSeconds: default run timeout; the core falls back to 600. */
  timeoutSeconds?: number;
}

export interface Route {
  channel: ChannelName;
  to?: string;
}

/**
 * An idempotency key and the answer its first request got. A host that records events durably keeps
 * it in the same write as the event or run acceptance it guards, so a crash cannot separate them,
 * and hands it back through `idempotency.restore()` at the next start.
 */
export interface IdempotencyRecord {
  /** wake, agent, or mapping:<id>: two senders' ids never collide. */
  scope: string;
  key: string;
  /** ms since the epoch. */
  at: number;
  status: number;
  body?: Record<string, unknown>;
  /** The first 64 bits of the request body's SHA-256 (16 hex digits): a key sent again with another body is refused. */
  bodyHash?: string;
}

export interface SystemEventMeta {
  source: 'hook';
  /** wake, agent, or the mapping's name */
  hook: string;
  runId?: string;
  /** Set on the event of a request that carried an idempotency key. */
  idempotency?: IdempotencyRecord;
}

export interface HostSessions {
  mainSessionKey(agentId: string): string;
  /** Resolves once the event is durably accepted; the core acknowledges the request after that. */
  enqueueSystemEvent(sessionKey: string, text: string, meta: SystemEventMeta): void | Promise<void>;
  requestHeartbeat(req: { agentId: string; reason: string }): void;
  lastRoute(agentId: string): Route | undefined;
  /**
   * Deletes a session and what it holds (hooks.sessionRetention: only a run's own one-off session);
   * settles once it is gone, or was never there. A host without it keeps every session.
   */
  deleteSession?(sessionKey: string): Promise<void>;
}

export interface IsolatedTurn {
  runId: string;
  agentId: string;
  /** Full session key of the run: agent:<agentId>:<hook session key> */
  sessionKey: string;
  prompt: string;
  model?: string;
  thinking?: string;
  timeoutMs: number;
  /**
   * Aborted at the run's deadline or at shutdown. A getter: the signal is made when first read, so a
   * host reads it only when its model can be aborted, and passes the turn on as it is (a copy made by
   * spreading it reads the signal).
   */
  readonly signal: AbortSignal;
}

export interface TurnResult {
  status: 'ok' | 'error' | 'timeout';
  reply?: string;
  error?: string;
  /** An error that may pass: the model provider could not be reached, or answered 429 or 5xx. */
  retryable?: boolean;
  /** The provider's announced wait before another try (its Retry-After), in ms. */
  retryAfterMs?: number;
  /** The model tokens the turn used, as the provider reported them (budgets count them). */
  usage?: { totalTokens: number };
}

/** retrying: a try failed in a way that may pass, and the next is scheduled (hooks.retry). */
export type RunStatus = 'queued' | 'running' | 'retrying' | 'ok' | 'error' | 'timeout';

/** One try of a run that was tried more than once. */
export interface RunAttempt {
  /** ISO time the try ended. */
  at: string;
  status: 'ok' | 'error' | 'timeout';
  error?: string;
}

/** An accepted run: the turn the host will be asked for (less its abort signal), and what follows it. */
export interface AcceptedRun extends Omit<IsolatedTurn, 'signal'> {
  name: string;
  /**
   * The hook that accepted it: `wake`, `agent` or the mapping's id (never the run's chosen name). The
   * failure book shares its room fairly between these. Absent on runs kept before it was recorded.
   */
  hookId?: string;
  wakeMode: 'now' | 'next-heartbeat';
  deliver: boolean;
  channel: 'last' | ChannelName;
  to?: string;
  /** The hook request that accepted it (its X-Request-Id), when it came from one. */
  requestId?: string;
  /** Where the reply goes, in order, when the delivery to its channel failed for good. */
  fallbacks?: readonly Route[];
  /**
   * Its session is its own `hook:<uuid>` (no session key was named): deleted once
   * hooks.sessionRetention has passed after the run ended.
   */
  oneOffSession?: true;
}

export interface RunRecord {
  runId: string;
  name: string;
  status: RunStatus;
  agentId: string;
  sessionKey: string;
  reply?: string;
  error?: string;
  /** On the "queued" update of a run whose request carried an idempotency key. */
  idempotency?: IdempotencyRecord;
  /** On the "queued" update: the whole run, for a host that hands accepted runs back (runs.restore). */
  run?: Readonly<AcceptedRun>;
  /** Once a run was tried more than once: every try so far. */
  attempts?: readonly RunAttempt[];
  /** With status "retrying": when the next try starts (ISO time). */
  nextAttemptAt?: string;
}

export interface HostRuns {
  runIsolatedTurn(turn: IsolatedTurn): Promise<TurnResult>;
  /**
   * Told of every status change of a hook run (queued, running, and the final one). A host that
   * records runs durably returns a promise that settles once the record is kept: for "queued", the
   * request's 202 and the run's start wait for it.
   */
  onRunUpdate?(record: Readonly<RunRecord>): void | Promise<void>;
  /**
   * Runs an earlier process accepted and never saw end, handed back once at start: `rerun` ones the
   * gateway never started run now (same runId), `interrupted` ones end as errors with their summary.
   */
  restore?(): Promise<{ rerun: readonly AcceptedRun[]; interrupted: readonly AcceptedRun[] }>;
  /**
   * The runs an earlier process kept a record of, oldest accepted first, handed over once at start:
   * the run book lists them again after a restart. A host without it starts with an empty book.
   */
  history?(): Promise<readonly PastRun[]>;
}

/** A run as an earlier process left it on disk: enough for the runs list, never its prompt or reply. */
export interface PastRun {
  runId: string;
  name: string;
  /** wake, agent or the mapping's id; absent on records kept before it was recorded. */
  hookId?: string;
  status: RunStatus;
  agentId: string;
  sessionKey: string;
  requestId?: string;
  /** When it was accepted, and when its record last changed (ISO times). */
  at: string;
  updatedAt: string;
  attempts?: readonly RunAttempt[];
  nextAttemptAt?: string;
  error?: string;
}

export interface Delivery {
  channel: ChannelName;
  to?: string;
  text: string;
  runId: string;
  agentId: string;
}

/** What became of a delivery once its last attempt is over. */
export interface DeliveryFact {
  channel: ChannelName;
  to?: string;
  /** recorded: a channel that only records (no credentials); failed: a dead letter. */
  status: 'sent' | 'failed' | 'recorded';
}

/** The reply queue tells when a reply's last attempt is over. */
export interface DeliveryReceipt {
  readonly outcome: Promise<DeliveryFact>;
}

/** One try at sending a reply, as the core's reply queue asks the host for it. */
export interface SendOptions {
  /** Aborted when the plugin stops: the host ends the try, which then counts as one that may pass. */
  signal: AbortSignal;
  /** Parts of a split reply that an earlier try sent: this try starts after them. */
  fromPart: number;
  /** Told after each part sent but the last: how many are sent by now, and their ids. */
  onPart(partsSent: number, messageIds: readonly string[]): void;
  /**
   * The longest a platform's announced wait (a 429's) may hold its channel or recipient:
   * hooks.retry.maxDelaySeconds in ms. The reply queue holds the next try to it as well.
   */
  maxWaitMs: number;
}

/** What one try came to; a failure's description is one line with no secret in it. */
export type SendResult =
  | { status: 'sent'; messageIds: readonly string[] }
  | {
      status: 'failed';
      /** True when trying again later may succeed (the network, a 429, a 5xx); false for a refusal. */
      retryable: boolean;
      description: string;
      /** The wait the platform announced, if any. */
      waitMs?: number;
      /** Parts sent before the failure, and their ids. */
      sentParts: number;
      messageIds: readonly string[];
    };

/** One failed try of a reply. */
export interface ReplyAttempt {
  at: string;
  error: string;
}

/** A reply's state: the whole of it, so the latest change alone tells it. */
export interface ReplyState {
  status: 'pending' | 'retrying' | 'sent' | 'failed';
  messageIds?: string[];
  /** Why it failed, in the platform's words (secrets removed). */
  error?: string;
  attempts?: ReplyAttempt[];
  nextAttemptAt?: string;
  partsSent?: number;
}

/** A reply as it entered the queue (or, for a channel that only records, as it was recorded). */
export interface ReplyEntry {
  /** Absent for a recorded reply: nothing waits on it. */
  id?: string;
  channel: ChannelName;
  to?: string;
  text: string;
  runId: string;
  agentId: string;
  at: string;
  status: 'pending' | 'recorded';
  /** A fallback's entry: the id of the delivery it replaces (which failed for good). */
  fallbackOf?: string;
}

/** Told of each reply and each change of its state, in order: a history people read (an outbox). */
export interface ReplyHistory {
  added(entry: ReplyEntry): Promise<void>;
  /** `moved`: the status changed (retrying, sent, failed); false: only progress (parts sent, a stop's cut). */
  changed(entry: ReplyEntry & { id: string }, state: ReplyState, moved: boolean): Promise<void>;
}

/**
 * How replies reach chats. The core queues each reply (plugin/replies/: pending, retrying, sent or
 * failed, resumed at start, a dead letter in the failure book); the host makes single tries.
 */
export interface HostReplies {
  /** One try; never throws: a failure is a result. */
  send(delivery: Delivery, options: SendOptions): Promise<SendResult>;
  /** False: replies to the channel are only recorded (no credentials), not queued. Default: all send. */
  sends?(channel: ChannelName): boolean;
  /** The recipient of a reply whose route names none. */
  defaultTo?(channel: ChannelName): string | undefined;
  /**
   * True: a run waits for its reply's first try, and a refusal there is the run's error (OpenClaw).
   * Default: a run waits only until its reply is queued.
   */
  firstTryInRun?: boolean;
  history?: ReplyHistory;
  /** The queue is stopping: tries still waiting for a turn (a pacer) end now, as ones that may pass. */
  stop?(): void;
}

/** What the core needs from the gateway's config file besides its own hooks block. */
export interface SelectedConfig {
  hooks: unknown;
  /** Where the hooks block sits in the file, for error messages (e.g. "hooks"). */
  hooksKey: string;
  gatewayToken?: string;
  trustedProxies?: unknown;
}

/** How written files are synced: the values of the standalone's storage.fsync. */
export type FsyncMode = 'never' | 'interval' | 'always';

/** A file with lines written but maybe not synced; it reports its own failures. */
export interface SyncTarget {
  syncNow(): Promise<void>;
}

/** When written files are synced (util/file-sync.ts): one per host, shared by its files. */
export interface FileSyncPolicy {
  readonly mode: FsyncMode;
  /** Whether a file keeps track of what it has not synced (not under "never"). */
  readonly tracks: boolean;
  /** A file has written lines; under "interval" the next background sync takes them. */
  written(file: SyncTarget): void;
  /** A file that closed: it synced what it could itself. */
  forget(file: SyncTarget): void;
}

export interface GatewayHost {
  logger: Logger;
  /** The JSON5 file holding the config; the core reads (and later watches) it. */
  configPath: string;
  /** Transforms root is <configDir>/hooks/transforms. */
  configDir: string;
  /**
   * A folder the plugin owns for what must outlive the process (retry schedules, failures, held
   * actions, pauses). Without it that state lives in memory only.
   */
  stateDir?: string;
  /**
   * When the plugin's state files under stateDir are synced to disk (the standalone's storage.fsync);
   * without it they are written, never synced (a killed process loses nothing, a power cut may).
   */
  fileSync?: FileSyncPolicy;
  /** Picks the hooks block and the gateway keys the core checks against. Default: standalone layout. */
  selectConfig?(file: Record<string, unknown>): SelectedConfig;
  /**
   * Checks the host's own keys of a config file the plugin is loading (throws ConfigError naming
   * them) and returns what applies them. A reload is taken whole: the plugin calls the function only
   * once the hooks block has passed too, and a problem in either keeps the last good config for both.
   */
  checkConfig?(file: Record<string, unknown>): () => void;
  /** Read on every request: a host may replace it when its own config changes. */
  agents: HostAgents;
  /** Available channels; read on every request. */
  channels: readonly ChannelName[];
  sessions: HostSessions;
  runs: HostRuns;
  /** Sends replies to chats, one try at a time; the core queues and retries them. */
  replies: HostReplies;
  /** A host that keeps idempotency keys durably gives back those of earlier runs, oldest first. */
  idempotency?: { restore(limits: { windowMs: number; maxKeys: number }): Promise<readonly IdempotencyRecord[]> };
  /**
   * The host's own credentials (channel tokens, model providers' keys), read when a peer's text comes
   * back: the core masks them, in every form a peer may echo them, in run errors and replies,
   * delivery descriptions and failure reasons (plugin/util/secret-redactor.ts).
   */
  secrets?(): readonly string[];
}
