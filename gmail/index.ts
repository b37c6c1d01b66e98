// The Gmail bridge: the one door to this folder. It watches a mailbox (Pub/Sub push or pull) and
// posts each new message to the gateway's own /hooks/gmail, through the public HTTP contract; its
// setup drives Google's OAuth and Pub/Sub. It reaches the core only through the host kit and the
// config and node:http kits.
export {
  GmailWatcher,
  type GmailWatcherOptions,
  type GmailWatcherState,
  type GmailWatcherCounters,
  type GmailFailureStage,
  GMAIL_FAILURE_STAGES,
} from './watcher.ts';
export { resolveGmailSettings, type GmailSettings } from './gmail-settings.ts';
export { gmailHookTarget } from './hook-target.ts';
export { googleEndpoints } from './google-endpoints.ts';
export {
  assertAccountName,
  readGmailCredentials,
  writeGmailCredentials,
  type GmailCredentials,
} from './gmail-credentials.ts';
export { GmailStatusWriter, gmailStatusPath, readGmailStatus, type GmailStatus } from './status-file.ts';
export { parsePastedCallback, readClientSecretFile, type Callback } from './installed-app-oauth.ts';
export { runGmailSetup, SETUP_STEPS } from './gmail-setup.ts';
export { SetupStepError, TESTING_MODE } from './setup-advice.ts';
