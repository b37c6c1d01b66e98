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
  type Logger,
} from '../../host-kit.ts';

export interface GatewayGmail {
  status(): Promise<unknown>;
  stop(): Promise<void>;
}

export async function startGatewayGmail(o: {
  file: Record<string, unknown>;
  configPath: string;
  stateDir: string;
  ownUrl: string;
  hooksPath: string;
  run: boolean;
  logger: Logger;
}): Promise<GatewayGmail | undefined> {
  const settings = resolveGmailSettings(o.file.hooks, 'hooks', o.configPath);
  if (!settings) return undefined;
  const fromFile = (): Promise<unknown> => readGmailStatus(o.stateDir, settings.account);
  if (!o.run) return { status: fromFile, stop: async () => {} };
  const watcher = new GmailWatcher({
    settings,
    stateDir: o.stateDir,
    endpoints: googleEndpoints(),
    hook: gmailHookTarget(o.file.hooks, {
      baseUrl: o.ownUrl,
      hooksPath: o.hooksPath,
      configDir: path.dirname(o.configPath),
      file: o.configPath,
    }),
    logger: o.logger,
  });
  await watcher.start();
  return {
    status: async () => ({ ...watcher.state(), pid: process.pid }),
    stop: () => watcher.stop(),
  };
}
