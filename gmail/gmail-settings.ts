// hooks.gmail as the watcher uses it: defaults filled in, and the checks between keys that the JSON
// Schema cannot express, each naming its key. The schema itself (schema/hooks-config.schema.json)
// has already been applied to the whole hooks block by resolveHooksConfig.
import { ConfigError } from '../plugin/host-kit.ts';

export interface GmailSettings {
  account: string;
  project: string;
  topic: string;
  subscription: string;
  mode: 'pull' | 'push';
  label: string;
  pushEndpoint: string | undefined;
  pushServiceAccount: string | undefined;
  serve: { bind: string; port: number; path: string };
  includeBody: boolean;
  maxBytes: number;
  renewEveryMs: number;
  resyncMessages: number;
}

export interface GmailBlock {
  account?: string;
  project?: string;
  topic?: string;
  subscription?: string;
  mode?: 'pull' | 'push';
  label?: string;
  pushEndpoint?: string;
  pushServiceAccount?: string;
  serve?: { bind?: string; port?: number; path?: string };
  includeBody?: boolean;
  maxBytes?: number;
  renewEveryMinutes?: number;
  resyncMessages?: number;
}

export const GMAIL_DEFAULTS = Object.freeze({
  topic: 'gmail-watch',
  subscription: 'gmail-watch-sub',
  mode: 'pull' as const,
  label: 'INBOX',
  serve: Object.freeze({ bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' }),
  includeBody: true,
  maxBytes: 20_000,
  renewEveryMinutes: 720,
  resyncMessages: 20,
});

/** The watcher's settings, or undefined when hooks.gmail.account is not set (no watcher). */
export function resolveGmailSettings(hooks: unknown, root = 'hooks', file?: string): GmailSettings | undefined {
  const block = (hooks as { gmail?: GmailBlock } | undefined)?.gmail;
  if (!block?.account) return undefined;
  const key = `${root}.gmail`;
  const problems: string[] = [];
  if (!block.project) problems.push(`${key}.project is required when ${key}.account is set`);
  const mode = block.mode ?? GMAIL_DEFAULTS.mode;
  if (mode === 'push' && !block.pushEndpoint) problems.push(`${key}.pushEndpoint is required when ${key}.mode is push`);
  if (mode === 'pull' && block.pushEndpoint) problems.push(`${key}.pushEndpoint is only for ${key}.mode push`);
  if (problems.length) throw new ConfigError(problems, file);
  return {
    account: block.account,
    project: block.project!,
    topic: block.topic ?? GMAIL_DEFAULTS.topic,
    subscription: block.subscription ?? GMAIL_DEFAULTS.subscription,
    mode,
    label: block.label ?? GMAIL_DEFAULTS.label,
    pushEndpoint: block.pushEndpoint,
    pushServiceAccount: block.pushServiceAccount,
    serve: { ...GMAIL_DEFAULTS.serve, ...block.serve },
    includeBody: block.includeBody ?? GMAIL_DEFAULTS.includeBody,
    maxBytes: block.maxBytes ?? GMAIL_DEFAULTS.maxBytes,
    renewEveryMs: Math.max(1, Math.round((block.renewEveryMinutes ?? GMAIL_DEFAULTS.renewEveryMinutes) * 60_000)),
    resyncMessages: block.resyncMessages ?? GMAIL_DEFAULTS.resyncMessages,
  };
}
