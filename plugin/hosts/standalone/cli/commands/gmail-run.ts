// `hookgate webhooks gmail run` (the Gmail watcher in a process of its own, posting to the gateway)
// and `hookgate webhooks gmail status` (the watcher's state as a table, from the gateway's
// GET /api/gmail or, when no gateway answers, from the status file a `run` keeps).
import { parseArgs } from 'node:util';
import { ConfigError } from '../../../../host-kit.ts';
import {
  GmailStatusWriter,
  GmailWatcher,
  gmailHookTarget,
  gmailStatusPath,
  googleEndpoints,
  readGmailCredentials,
  readGmailStatus,
  resolveGmailSettings,
  type GmailStatus,
} from '../../../../../gmail/index.ts';
import { loadForDryRun } from '../../../../kits/config.ts';
import { checkingHost, localUrl, type GatewaySettings } from '../../server/settings.ts';
import { createLineLogger } from '../../io/line-logger.ts';
import { loadContext } from '../support/context.ts';
import { asRun } from '../support/command-name.ts';

export const GMAIL_RUN_HELP = `  run     Watch the mailbox and post new mail to <hooks.path>/gmail
          [--config FILE] [--state-dir DIR] [--gateway-url URL]
          Renews the Gmail watch at start and every hooks.gmail.renewEveryMinutes, takes
          notifications (pull: from the Pub/Sub subscription, no public URL needed; push: serves
          hooks.gmail.serve and checks each push's OIDC token), reads history from the stored
          cursor (<state-dir>/data/gmail-<account>.json) and moves it only after the hook accepted
          the messages. Posts to --gateway-url (default http://<gateway.bind>:<gateway.port>).
          \`hookgate gateway\` runs the same watcher itself when hooks.gmail.account is set (unless
          --no-gmail); run this command only with a gateway started with --no-gmail, or with
          another host.
  status  Print the watcher's state: watch expiry, cursor, last notification, last error, counts
          [--config FILE] [--state-dir DIR] [--gateway-url URL] [--json]`;

const OPTIONS = {
  config: { type: 'string' },
  'state-dir': { type: 'string' },
  'gateway-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

interface Loaded {
  stateDir: string;
  configPath: string;
  file: Record<string, unknown>;
  settings: GatewaySettings;
  gatewayUrl: string;
  gatewayToken: string;
}

async function load(values: { config?: string; 'state-dir'?: string; 'gateway-url'?: string }): Promise<Loaded> {
  const { configPath, stateDir, file, settings: gateway } = await loadContext(values);
  let gatewayUrl = values['gateway-url'];
  if (gatewayUrl === undefined) {
    gatewayUrl = localUrl(gateway.bind, gateway.port);
  } else if (!/^https?:\/\/[^/?#]+\/?$/.test(gatewayUrl)) {
    throw new ConfigError(['--gateway-url must be an http(s) origin such as http://127.0.0.1:18789']);
  }
  return {
    stateDir,
    configPath,
    file,
    settings: gateway,
    gatewayUrl: gatewayUrl.replace(/\/$/, ''),
    gatewayToken: gateway.gatewayToken,
  };
}

export async function gmailRunCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: OPTIONS, strict: true });
  if (values.help) {
    console.log(
      asRun(
        `Usage: hookgate webhooks gmail run [--config FILE] [--state-dir DIR] [--gateway-url URL]\n\n${GMAIL_RUN_HELP}`,
      ),
    );
    return 0;
  }
  const { stateDir, configPath, file, settings: gateway, gatewayUrl } = await load(values);
  const settings = resolveGmailSettings(file.hooks, 'hooks', configPath);
  if (!settings) {
    throw new ConfigError(['hooks.gmail.account is not set; run `hookgate webhooks gmail setup` first'], configPath);
  }
  // The hooks as the gateway loads them, to read the gmail hook from. A mapping whose "${NAME}" is
  // unset in this shell is left out (it is the gateway's to resolve), unless it may own the gmail hook.
  const { snapshot, unavailable } = await loadForDryRun(checkingHost(configPath, gateway));
  const blocking = unavailable.filter((u) => u.name === undefined || u.name === 'gmail').flatMap((u) => u.problems);
  if (blocking.length) throw new ConfigError(blocking, configPath);
  const hook = gmailHookTarget(snapshot, gatewayUrl, { file: configPath });
  // Fail at once, with what to do, when setup has not stored the credentials.
  await readGmailCredentials(stateDir, settings.account);
  const logger = createLineLogger();
  const status = new GmailStatusWriter(gmailStatusPath(stateDir, settings.account));
  const watcher = new GmailWatcher({
    settings,
    stateDir,
    endpoints: googleEndpoints(),
    hook,
    logger,
    onState: (state, counters) => status.update(state, counters),
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  await watcher.start();
  const { pushUrl } = watcher.state();
  console.log(
    `gmail watcher running for ${settings.account} (${settings.mode} mode${pushUrl ? `, push on ${pushUrl}` : ''}), posting to ${hook.url}`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await watcher.stop();
  const final = watcher.state();
  status.update(final, final.counters);
  await status.flush();
  logger.info('gmail watcher stopped');
  await logger.close();
  return 0;
}

export async function gmailStatusCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { ...OPTIONS, json: { type: 'boolean' } }, strict: true });
  if (values.help) {
    console.log(
      asRun('Usage: hookgate webhooks gmail status [--config FILE] [--state-dir DIR] [--gateway-url URL] [--json]'),
    );
    return 0;
  }
  const { stateDir, configPath, file, gatewayUrl, gatewayToken } = await load(values);
  const settings = resolveGmailSettings(file.hooks, 'hooks', configPath);
  if (!settings) {
    console.error('No Gmail watcher: hooks.gmail.account is not set (run `hookgate webhooks gmail setup`).');
    return 1;
  }
  let status: GmailStatus | undefined;
  let source: string;
  try {
    const r = await fetch(`${gatewayUrl}/api/gmail`, {
      headers: { authorization: `Bearer ${gatewayToken}` },
      signal: AbortSignal.timeout(5000),
    });
    if (r.ok) status = (await r.json()) as GmailStatus;
    source = `gateway ${gatewayUrl}`;
  } catch {
    source = '';
  }
  if (!status) {
    status = await readGmailStatus(stateDir, settings.account);
    source = `status file ${gmailStatusPath(stateDir, settings.account)}`;
  }
  if (!status) {
    console.error(
      `No state for ${settings.account} yet: neither the gateway nor \`webhooks gmail run\` has run the watcher.`,
    );
    return 1;
  }
  if (values.json) console.log(JSON.stringify(status, null, 2));
  else console.log(statusTable(status, source));
  return 0;
}

function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const ms = Date.parse(iso) - now;
  const abs = Math.abs(ms);
  const span =
    abs < 60_000
      ? `${Math.round(abs / 1000)} s`
      : abs < 3600_000
        ? `${Math.round(abs / 60_000)} min`
        : abs < 86_400_000
          ? `${(abs / 3600_000).toFixed(1)} h`
          : `${(abs / 86_400_000).toFixed(1)} d`;
  return `${iso} (${ms >= 0 ? `in ${span}` : `${span} ago`})`;
}

export function statusTable(s: GmailStatus, source: string): string {
  const c = s.counters ?? ({} as GmailStatus['counters']);
  const rows: [string, string][] = [
    ['account', s.account],
    ['mode', s.pushUrl ? `${s.mode} (listening on ${s.pushUrl})` : s.mode],
    ['watch expires', ago(s.watchExpiresAt)],
    ['cursor', s.cursor ?? 'none yet'],
    ['last notification', ago(s.lastNotificationAt)],
    ['last sync', ago(s.lastSyncAt)],
    ['last error', s.lastError ? `${s.lastError.message} (${ago(s.lastError.at)})` : 'none'],
    ['notifications', String(c.notifications ?? 0)],
    ['delivered', String(c.messagesDelivered ?? 0)],
    ['skipped', String(c.messagesSkipped ?? 0)],
    ['resyncs', String(c.resyncs ?? 0)],
    ['watch renewals', String(c.watchRenewals ?? 0)],
    ['errors', String(c.errors ?? 0)],
    ['from', source],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}
