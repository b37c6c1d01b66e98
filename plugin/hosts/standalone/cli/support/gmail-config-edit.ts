// What `webhooks gmail setup` writes into the gateway config: hooks.gmail, hooks.presets += gmail and
// hooks.enabled, edited into the JSON5 text so that the file's comments, layout and every other key stay.
import { ConfigError } from '../../../../host-kit.ts';
import type { GmailSettings } from '../../../../../gmail/index.ts';
import { checkedEdit, parseConfigText } from './config-text-edit.ts';
import { editObject, isObject, type JsonObject } from './json5-edit.ts';

/** The hooks.gmail keys setup decides (they follow the command line on every run). */
export type GmailSetupKeys = Pick<
  GmailSettings,
  'account' | 'project' | 'topic' | 'subscription' | 'mode' | 'label'
> & {
  pushEndpoint?: string;
  /** Push mode: the service account the push's OIDC token is signed as (the watcher checks its email). */
  pushServiceAccount?: string;
};

/**
 * Tunables written with their defaults only when absent, so the user sees them in the file and their own
 * values survive a second setup.
 */
const TUNABLE_DEFAULTS: JsonObject = {
  includeBody: true,
  maxBytes: 20000,
  renewEveryMinutes: 720,
  resyncMessages: 20,
};
const PUSH_SERVE_DEFAULT: JsonObject = { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' };

/** The whole file as it should be after setup (other keys as they are). */
function wantedFile(file: JsonObject, keys: GmailSetupKeys, configPath: string): JsonObject {
  const hooks = file.hooks ?? {};
  if (!isObject(hooks)) throw new ConfigError(['hooks must be an object'], configPath);
  const presets = hooks.presets ?? [];
  if (!Array.isArray(presets)) throw new ConfigError(['hooks.presets must be a list'], configPath);
  const gmail = hooks.gmail ?? {};
  if (!isObject(gmail)) throw new ConfigError(['hooks.gmail must be an object'], configPath);
  const { pushEndpoint: _endpoint, pushServiceAccount: _account, ...rest } = gmail;
  const owned: JsonObject = {
    account: keys.account,
    project: keys.project,
    topic: keys.topic,
    subscription: keys.subscription,
    mode: keys.mode,
    label: keys.label,
    ...(keys.mode === 'push' ? { pushEndpoint: keys.pushEndpoint! } : {}),
    ...(keys.mode === 'push' && keys.pushServiceAccount ? { pushServiceAccount: keys.pushServiceAccount } : {}),
  };
  // The owned keys lead a new block; the user's values win over the defaults, the command line over both.
  // A pull setup after a push one drops the push keys: stale ones would only mislead.
  const next: JsonObject = {
    ...owned,
    ...(keys.mode === 'push' ? { serve: PUSH_SERVE_DEFAULT } : {}),
    ...TUNABLE_DEFAULTS,
    ...rest,
    ...owned,
  };
  return {
    ...file,
    hooks: {
      ...hooks,
      enabled: true,
      presets: presets.includes('gmail') ? presets : [...presets, 'gmail'],
      gmail: next,
    },
  };
}

/**
 * Returns the config text with the setup applied. Only values that differ are touched, so running it on
 * its own output returns the same text byte for byte. The result is read back and must equal the
 * intended value: a config that no longer loads is never returned.
 */
export function applyGmailSetup(text: string, keys: GmailSetupKeys, configPath: string): string {
  const file = parseConfigText(text, configPath);
  const wanted = wantedFile(file, keys, configPath);
  const gmail = JSON.stringify((wanted.hooks as JsonObject).gmail);
  return checkedEdit(
    text,
    wanted,
    () => editObject(text, [], file, wanted),
    `set hooks.enabled: true, add "gmail" to hooks.presets and set hooks.gmail to ${gmail} by hand`,
    configPath,
  );
}
