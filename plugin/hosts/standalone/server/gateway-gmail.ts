// The Gmail watcher inside `hookgate gateway`: started when hooks.gmail.account is set (unless
// --no-gmail), posting to the gateway's own listening URL. Its state is what GET /api/gmail shows;
// without a watcher here, /api/gmail shows the status file of a `webhooks gmail run` elsewhere.
// Changes to hooks.gmail apply at the next start.
import path from 'node:path';
import {
  GmailWatcher,
  gmailHookTarget,
  googleEndpoints,
  readGmailStatus,
  resolveGmailSettings,
  type GmailWatcherOptions,
} from '../../../../gmail/index.ts';
import type { Logger } from '../../../host.ts';

/** What the watcher tells the gateway as it happens (counted in /metrics). */
export type GmailEvents = NonNullable<GmailWatcherOptions['events']>;

export interface GatewayGmail {
  status(): Promise<unknown>;
  stop(): Promise<void>;
}

/**
 * Checks hooks.gmail before the gateway listens (a problem stops the start, naming the key) and
 * returns what starts the watcher once the gateway's own URL is known; undefined without an account.
 */
export function planGatewayGmail(o: {
  file: Record<string, unknown>;
  configPath: string;
  stateDir: string;
  /** hooks.path as in force when the watcher starts. */
  hooksPath: () => string;
  run: boolean;
  logger: Logger;
}): ((ownUrl: string, events?: GmailEvents) => Promise<GatewayGmail>) | undefined {
  const settings = resolveGmailSettings(o.file.hooks, 'hooks', o.configPath);
  if (!settings) return undefined;
  const fromFile = (): Promise<unknown> => readGmailStatus(o.stateDir, settings.account);
  if (!o.run) return async () => ({ status: fromFile, stop: async () => {} });
  const target = (baseUrl: string, hooksPath: string) =>
    gmailHookTarget(o.file.hooks, {
      baseUrl,
      hooksPath,
      configDir: path.dirname(o.configPath),
      file: o.configPath,
    });
  target('http://127.0.0.1', '/hooks'); // the hook token is there to post with
  return async (ownUrl, events) => {
    const watcher = new GmailWatcher({
      settings,
      stateDir: o.stateDir,
      endpoints: googleEndpoints(),
      hook: target(ownUrl, o.hooksPath()),
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
