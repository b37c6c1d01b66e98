// What a host may use of the core: the plugin itself, the host contract, the error catalogue and the
// answer writer, and the few HTTP and config helpers a gateway around the plugin needs. Hosts import
// from here and nowhere else in the core (a lint rule says so), and the core never imports a host.
export { createHooksPlugin, type HooksPlugin, type HooksPluginOptions, type ReloadResult } from './index.ts';
export * from './host.ts';
export { ConfigError, HookError, refuse, type ErrorCode } from './errors.ts';
export { writeError, writeJson } from './http/answers.ts';
export { answerClientError, answerExpectation } from './http/protocol-errors.ts';
export { deferContinue, sendContinue } from './http/continue.ts';
export { splitTarget } from './http/request-target.ts';
export { clientAddress } from './http/client-address.ts';
export { addressKey } from './http/address-key.ts';
export { compileTrustedProxies, type TrustedProxies } from './http/trusted-proxies.ts';
export { digestToken, extractToken, tokenMatches, type TokenDigest } from './auth/token.ts';
export { AuthFailureLimiter } from './auth/limiter.ts';
export { readConfigFile } from './config/load.ts';
export { loadConfig } from './config/load-snapshot.ts';
export { DEFAULTS } from './config/defaults.ts';
export { resolveHooksConfig, selectStandaloneConfig } from './config/hooks-config.ts';
export { compileSchema, formatErrors } from './config/schemas.ts';
export {
  GmailWatcher,
  type GmailWatcherOptions,
  type GmailWatcherState,
  type GmailWatcherCounters,
} from '../gmail/watcher.ts';
export { resolveGmailSettings, type GmailSettings } from '../gmail/gmail-settings.ts';
export { gmailHookTarget } from '../gmail/hook-target.ts';
export { googleEndpoints } from '../gmail/google-endpoints.ts';
export { readGmailCredentials } from '../gmail/gmail-credentials.ts';
export { GmailStatusWriter, gmailStatusPath, readGmailStatus, type GmailStatus } from '../gmail/status-file.ts';
// Gmail setup (the `webhooks gmail setup` command).
export { assertAccountName, writeGmailCredentials, type GmailCredentials } from '../gmail/gmail-credentials.ts';
export { parsePastedCallback, readClientSecretFile, type Callback } from '../gmail/installed-app-oauth.ts';
export { runGmailSetup, SETUP_STEPS } from '../gmail/gmail-setup.ts';
export { SetupStepError, TESTING_MODE } from '../gmail/setup-advice.ts';
export { writeFileAtomic } from './util/write-file-atomic.ts';
export { createMetrics, type HookMetrics, type EndpointLabel, type GmailErrorStage } from './observe/metrics.ts';
export { REQUEST_LOG_SIZE, type RequestEntry, type RequestLog } from './observe/request-log.ts';
export {
  DEFAULT_REQUESTS_LIMIT,
  hooksStatus,
  recentRequests,
  validRequestsLimit,
  type HooksStatus,
  type RequestsQuery,
} from './observe/status-view.ts';
export { unwrapExternalContent } from './safety/external-content.ts';
export { dryRun, loadForDryRun, type DryRunRequest, type DryRunResult } from './observe/dry-run.ts';
export { TransformRunner } from './mappings/transform-runner.ts';
export { keepFairly } from './dedupe/fair-share.ts';
export { resolveChannels, type Channel, type DeliveryResult, type ResolvedChannels } from '../channels/index.ts';
export type { HooksSnapshot } from './config/snapshot.ts';
