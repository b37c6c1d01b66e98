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

/** What the watcher tells the gateway as it happens (counted in /metrics). */
export type GmailEvents = NonNullable<GmailWatcherOptions['events']>;

export interface GatewayGmail {
  status(): Promise<unknown>;
  stop(): Promise<void>;
}

/** Starts the watcher once the gateway's own URL is known. */
export type StartGmail = (ownUrl: string, events?: GmailEvents) => Promise<GatewayGmail>;

/**
 * Checks hooks.gmail before the gateway starts anything (a problem stops the start, naming the key);
 * undefined without an account. What it returns is given the plugin's loaded hooks before the gateway
 * listens: the hook the watcher posts to is read from them (a problem stops the start too).
 */
export function planGatewayGmail(o: {
  file: Record<string, unknown>;
  configPath: string;
  stateDir: string;
  run: boolean;
  logger: Logger;
}): ((hooks: HooksSnapshot) => StartGmail) | undefined {
  const settings = resolveGmailSettings(o.file.hooks, 'hooks', o.configPath);
  if (!settings) return undefined;
  const fromFile = (): Promise<unknown> => readGmailStatus(o.stateDir, settings.account);
  if (!o.run) return () => async () => ({ status: fromFile, stop: async () => {} });
  return (hooks) => {
    gmailHookTarget(hooks, 'http://127.0.0.1', { file: o.configPath }); // the watcher can post there
    return async (ownUrl, events) => {
      const watcher = new GmailWatcher({
        settings,
        stateDir: o.stateDir,
        endpoints: googleEndpoints(),
        hook: gmailHookTarget(hooks, ownUrl, { file: o.configPath }),
        logger: o.logger,
        events,
      });
      await watcher.start();
      return {
        status: async () => ({ ...watcher.state(), pid: process.pid }),
        stop: () => watcher.stop(),
      };
    };
  };
}
