// What `webhooks gmail setup` writes into the gateway config: hooks.gmail, hooks.presets += gmail and
// hooks.enabled, edited into the JSON5 text so that the file's comments, layout and every other key stay.
import { isDeepStrictEqual } from 'node:util';
import { JsonArrayNode, JsonObjectNode, JsonParser, JsonPrimitiveNode, type Formatting } from '@croct/json5-parser';
import JSON5 from 'json5';
import { ConfigError } from '../../host-kit.ts';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** The hooks.gmail keys setup decides (they follow the command line on every run). */
export interface GmailSetupKeys {
  account: string;
  project: string;
  topic: string;
  subscription: string;
  mode: 'pull' | 'push';
  label: string;
  pushEndpoint?: string;
}

/**
 * Tunables written with their defaults only when absent, so the user sees them in the file and their own
 * values survive a second setup.
 */
const TUNABLE_DEFAULTS: Record<string, Json> = {
  includeBody: true,
  maxBytes: 20000,
  renewEveryMinutes: 720,
  resyncMessages: 20,
};
const PUSH_SERVE_DEFAULT: Json = { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' };

/**
 * Returns the config text with the setup applied. Only values that differ are touched, so running it on
 * its own output returns the same text byte for byte.
 */
export function applyGmailSetup(text: string, keys: GmailSetupKeys, configPath: string): string {
  let root: JsonObjectNode;
  try {
    root = JsonParser.parse(text, JsonObjectNode);
  } catch (err) {
    throw new ConfigError([`the file is not a JSON5 object (${(err as Error).message})`], configPath);
  }
  const hooksIsNew = !root.has('hooks');
  const hooks = objectAt(root, 'hooks', configPath);
  setIfDifferent(hooks, 'enabled', true);

  if (!hooks.has('presets')) hooks.set('presets', ['gmail']);
  else {
    const presets = hooks.get('presets');
    if (!(presets instanceof JsonArrayNode)) throw new ConfigError(['hooks.presets must be a list'], configPath);
    if (!presets.toJSON().includes('gmail')) presets.push('gmail');
  }

  const gmailIsNew = !hooks.has('gmail');
  const gmail = objectAt(hooks, 'gmail', configPath, 'hooks.');
  const owned: Record<string, Json> = {
    account: keys.account,
    project: keys.project,
    topic: keys.topic,
    subscription: keys.subscription,
    mode: keys.mode,
    label: keys.label,
  };
  for (const [key, value] of Object.entries(owned)) setIfDifferent(gmail, key, value);
  if (keys.mode === 'push') {
    setIfDifferent(gmail, 'pushEndpoint', keys.pushEndpoint!);
    if (!gmail.has('serve')) gmail.set('serve', PUSH_SERVE_DEFAULT);
  } else if (gmail.has('pushEndpoint')) {
    // A pull setup after a push one: a stale endpoint would only mislead.
    gmail.delete('pushEndpoint');
  }
  for (const [key, value] of Object.entries(TUNABLE_DEFAULTS)) if (!gmail.has(key)) gmail.set(key, value);
  // A block made here copies its parent's style, which for a one-line parent is one long line.
  if (hooksIsNew) hooks.reformat(blockStyle(1));
  else if (gmailIsNew) gmail.reformat(blockStyle(2));
  return printChecked(root, configPath);
}

/**
 * The edited text, checked to read back as the edited value: the library can misprint some compact
 * layouts, and a config that no longer loads must never be written.
 */
function printChecked(root: JsonObjectNode, configPath: string): string {
  const text = root.toString();
  const intended = root.toJSON();
  let readBack: unknown;
  try {
    readBack = JSON5.parse(text);
  } catch {
    readBack = undefined;
  }
  if (!isDeepStrictEqual(readBack, intended)) {
    const gmail = (intended.hooks as Record<string, unknown>).gmail;
    throw new ConfigError(
      [
        `could not edit the file keeping its layout; set hooks.enabled: true, add "gmail" to hooks.presets ` +
          `and set hooks.gmail to ${JSON.stringify(gmail)} by hand`,
      ],
      configPath,
    );
  }
  return text;
}

/** The layout writeDefaultConfig uses: one key per line, two spaces, trailing commas. */
function blockStyle(indentationLevel: number): Formatting {
  const block = {
    indentationSize: 2,
    leadingIndentation: true,
    trailingIndentation: true,
    entryIndentation: true,
    trailingComma: true,
    commaSpacing: true,
    colonSpacing: true,
  };
  return { indentationLevel, property: { unquoted: true }, string: { quote: 'double' }, object: block, array: block };
}

/** The object at key, created empty when missing; anything else there is a config problem. */
function objectAt(parent: JsonObjectNode, key: string, configPath: string, prefix = ''): JsonObjectNode {
  if (!parent.has(key)) parent.set(key, {});
  const node = parent.get(key);
  if (!(node instanceof JsonObjectNode)) throw new ConfigError([`${prefix}${key} must be an object`], configPath);
  return node;
}

function setIfDifferent(node: JsonObjectNode, key: string, value: Json): void {
  if (node.has(key)) {
    const current = node.get(key);
    if (current instanceof JsonPrimitiveNode && current.toJSON() === value) return;
  }
  node.set(key, value);
}
