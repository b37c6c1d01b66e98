// The Gmail watcher inside `hookgate gateway`: started when hooks.gmail.account is set (unless
// --no-gmail), posting to the gateway's own listening URL. Its state is what GET /api/gmail shows;
// without a watcher here, /api/gmail shows the status file of a `webhooks gmail run` elsewhere.
// Changes to hooks.gmail apply at the next start.
import {
  GmailWatcher,
  gmailHookTarget,
  googleEndpoints,
  readGmailStatus,
  resolveGmailSettings,
  type GmailWatcherOptions,
} from '../../../../gmail/index.ts';
import type { HooksSnapshot } from '../../../host-kit.ts';
import type { Logger } from '../../../host.ts';
import { loadConfig } from '../../../kits/config.ts';
import { checkingHost, type GatewaySettings } from './settings.ts';

/** What the watcher tells the gateway as it happens (counted in /metrics). */
export type GmailEvents = NonNullable<GmailWatcherOptions['events']>;

export interface GatewayGmail {
  status(): Promise<unknown>;
  stop(): Promise<void>;
}

/**
 * Checks hooks.gmail, and the hook the watcher posts to as the config loads, before the gateway
 * starts anything (a problem stops the start, naming the key); returns what starts the watcher once
 * the gateway's own URL is known, posting to the hook as the plugin's snapshot then has it.
 * Undefined without an account.
 */
export async function planGatewayGmail(o: {
  file: Record<string, unknown>;
  settings: GatewaySettings;
  configPath: string;
  stateDir: string;
  /** The plugin's hooks, read when the watcher starts. */
  snapshot: () => HooksSnapshot;
  run: boolean;
  logger: Logger;
}): Promise<((ownUrl: string, events?: GmailEvents) => Promise<GatewayGmail>) | undefined> {
  const settings = resolveGmailSettings(o.file.hooks, 'hooks', o.configPath);
  if (!settings) return undefined;
  const fromFile = (): Promise<unknown> => readGmailStatus(o.stateDir, settings.account);
  if (!o.run) return async () => ({ status: fromFile, stop: async () => {} });
  // Loaded here as the plugin will load it: once the plugin runs, a throw would leave the process up.
  const { snapshot } = await loadConfig(checkingHost(o.configPath, o.settings));
  gmailHookTarget(snapshot, 'http://127.0.0.1', { file: o.configPath }); // the watcher can post there
  return async (ownUrl, events) => {
    const watcher = new GmailWatcher({
      settings,
      stateDir: o.stateDir,
      endpoints: googleEndpoints(),
      hook: gmailHookTarget(o.snapshot(), ownUrl, { file: o.configPath }),
      logger: o.logger,
      events,
    });
    await watcher.start();
    return {
      status: async () => ({ ...watcher.state(), pid: process.pid }),
      stop: () => watcher.stop(),
    };
  };
}
