// The immutable view of the hooks config that a request reads (and nothing else): built on load and
// on every accepted reload, swapped whole.
import type { TokenDigest } from '../auth/token.ts';
import type { Credentials } from '../auth/credentials.ts';
import type { AuthRateLimit } from '../auth/limiter.ts';
import type { TrustedProxies } from '../http/trusted-proxies.ts';
import type { CompiledMapping, MappingIndex } from '../mappings/mapping.ts';
import type { RetryPolicy } from '../retry/retry-policy.ts';
import type { SharedStateConfig } from '../redis/shared-redis.ts';
import type { QueueSettings } from '../queue/queue-settings.ts';
import type { RoutingPolicy } from '../runs/policies.ts';
import type { AddressList } from '../http/address-list.ts';
import type { HookRateLimit } from '../auth/hook-rate-limit.ts';
import type { WaitLimits } from '../runs/wait-slots.ts';
import type { HookConcurrency } from '../runs/hook-queues.ts';
import type { SessionRetentionSettings } from '../runs/session-retention.ts';
import type { Budget } from '../budgets/budget.ts';
import type { RequestLogBounds } from '../request-log/request-log.ts';

/** The routing settings (allowed agents, session keys and prefixes) are the runs room's RoutingPolicy. */
export interface HooksSnapshot extends RoutingPolicy, SessionRetentionSettings {
  readonly enabled: boolean;
  /** Normalised prefix without trailing slash, e.g. "/hooks". */
  readonly path: string;
  /** Every hook token in force (several while one is rotated out); none when disabled. */
  readonly tokenDigests: readonly TokenDigest[];
  /** What senders may present as it is (hook tokens, bearer/basic secrets): for the limiter's rotation rule. */
  readonly credentials: Credentials;
  readonly maxBodyBytes: number;
  readonly bodyTimeoutMs: number;
  readonly authRateLimit: Readonly<AuthRateLimit>;
  readonly maxConcurrentRuns: number;
  readonly maxQueuedRuns: number;
  /** Each hook's own maxConcurrentRuns (a mapping's by its id; /hooks/agent's as `agent`). */
  readonly hookConcurrency: HookConcurrency;
  readonly trustedProxies: TrustedProxies | undefined;
  /** hooks.allowedSources: the addresses any hook request may come from; undefined admits any. */
  readonly allowedSources: AddressList | undefined;
  /** hooks.endpoints.<wake|agent>.rateLimit. */
  readonly endpointRateLimits: { readonly wake?: HookRateLimit; readonly agent?: HookRateLimit };
  /** hooks.endpoints.agent.acceptedStatus: what /hooks/agent answers for accepted runs. */
  readonly agentAcceptedStatus: 200 | 202;
  /** hooks.budget: what all hooks together may spend. */
  readonly budget?: Budget;
  /** hooks.endpoints.agent.budget. */
  readonly endpointBudgets: { readonly agent?: Budget };
  /** <configDir>/hooks/transforms: nothing a mapping loads may leave it. */
  readonly transformsRoot: string;
  readonly transformsDir: string;
  readonly transformTimeoutMs: number;
  readonly presets: readonly string[];
  readonly dedupe: { readonly windowMs: number; readonly maxKeys: number };
  /** hooks.retry: how failed runs and deliveries are tried again. */
  readonly retry: Readonly<RetryPolicy>;
  /** hooks.maxWaitSeconds in ms: the longest a waitForCompletion request waits. */
  readonly maxWaitMs: number;
  /** hooks.maxWaitingRequests: waits under way at once, in all and per client address. */
  readonly maxWaitingRequests: Readonly<WaitLimits>;
  /** hooks.maxHeld: actions held for paused hooks, in all. */
  readonly maxHeld: number;
  /** hooks.maxHeldBytes: bytes of actions held for paused hooks (their lines on disk), in all. */
  readonly maxHeldBytes: number;
  /** gateway.auth.token (OpenClaw's own in OpenClaw), the owner's: the console's login; undefined when unset. */
  readonly ownerToken: TokenDigest | undefined;
  /** hooks.console: whether the owner's web page is served, and how long a login lasts. */
  readonly console: { readonly enabled: boolean; readonly sessionHours: number };
  /** hooks.requestLog: the request log's bounds (entries, and age in ms), whichever is smaller. */
  readonly requestLog: RequestLogBounds;
  /** Each registered preset's own block (hooks.<preset name>), as configured: the preset reads it. */
  readonly presetSettings: ReadonlyMap<string, unknown>;
  /** As configured; compileMappings turns them into `mappings`. */
  readonly mappingConfigs: readonly unknown[];
  readonly mappings: readonly CompiledMapping[];
  /** hooks.sharedState, read at start: lockouts and dedupe keys shared on Redis. */
  readonly sharedState: SharedStateConfig | undefined;
  /** hooks.queue, read at start: accepted actions go to the queue on Redis. */
  readonly queue: QueueSettings | undefined;
  readonly mappingIndex: MappingIndex;
}
