// `hookgate openclaw import`: moves OpenClaw's own top-level `hooks` block (its built-in webhook receiver)
// into hookgate's plugin config, plugins.entries.hookgate.config, and turns the built-in hooks off. The
// file is edited as text, so its comments, layout and every other key stay (a strict JSON file stays
// strict JSON); the result must pass the same checks the plugin makes at start, or nothing is written.
import { readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../../../../host-kit.ts';
import { resolveHooksConfig } from '../../../../kits/config.ts';
import { writeFileAtomic } from '../../../../util/write-file-atomic.ts';
import { checkedEdit, parseConfigText } from '../support/config-text-edit.ts';
import {
  editObject,
  isObject,
  setPropertySource,
  sourceAt,
  type Json,
  type JsonObject,
} from '../support/json5-edit.ts';
import { UsageError } from '../support/cli-common.ts';

export const OPENCLAW_IMPORT_HELP = `Usage: hookgate openclaw import [--openclaw-config FILE]

Moves OpenClaw's built-in hooks (the top-level "hooks" block: token, path, policies, mappings,
presets, transformsDir, gmail) into hookgate's plugin config, plugins.entries.hookgate.config, and
sets hooks.enabled: false. Comments and every other key of the file stay as they are. Prints what
it changed; restart OpenClaw afterwards.

Options:
  --openclaw-config FILE  OpenClaw's config. Default: $OPENCLAW_CONFIG_PATH, else
                          $OPENCLAW_STATE_DIR/openclaw.json, else ~/.openclaw/openclaw.json.`;

const PLUGIN_ID = 'hookgate';
const TARGET = `plugins.entries.${PLUGIN_ID}.config`;
/** The hooks keys that move as they are (same names and meaning in hookgate). */
const MOVED = [
  'enabled',
  'token',
  'path',
  'defaultSessionKey',
  'allowRequestSessionKey',
  'allowedSessionKeyPrefixes',
  'allowedAgentIds',
  'presets',
  'transformsDir',
] as const;
/** OpenClaw's gmail keys that hookgate's watcher reads the same way. */
const GMAIL_KEPT = [
  'account',
  'label',
  'topic',
  'subscription',
  'includeBody',
  'maxBytes',
  'renewEveryMinutes',
  'allowUnsafeExternalContent',
  'model',
  'thinking',
];

export interface ImportResult {
  text: string;
  /** One line per change, for the user. */
  changes: string[];
}

function openClawConfigPath(flag: string | undefined): string {
  if (flag) return path.resolve(flag);
  if (process.env.OPENCLAW_CONFIG_PATH) return path.resolve(process.env.OPENCLAW_CONFIG_PATH);
  const stateDir = process.env.OPENCLAW_STATE_DIR ?? path.join(homedir(), '.openclaw');
  return path.resolve(stateDir, 'openclaw.json');
}

/** A mapping as hookgate reads it: OpenClaw's implicit default action written out, sessionMode settled. */
function importMapping(raw: Json, index: number, notes: string[], problems: string[]): Json {
  if (!isObject(raw)) return raw;
  const where = `hooks.mappings[${index}]${typeof raw.id === 'string' ? ` (id "${raw.id}")` : ''}`;
  const { sessionMode, ...mapping } = raw;
  if (sessionMode === 'persistent')
    problems.push(`${where}.sessionMode "persistent": hookgate runs each hook in its own isolated session`);
  else if (sessionMode !== undefined) notes.push(`${where}: sessionMode "isolated" dropped (hookgate's only mode)`);
  // OpenClaw's default is agent; hookgate's would be wake for a mapping with only a textTemplate.
  if (mapping.action === undefined) mapping.action = 'agent';
  if (typeof mapping.forEach === 'string') importFanOut(mapping, mapping.forEach, where, notes);
  return mapping;
}

/** Templates that render a field per fan-out item, as hookgate's templates do. */
const TEMPLATED = ['textTemplate', 'messageTemplate', 'name', 'sessionKey', 'to', 'model', 'thinking'];

/**
 * OpenClaw hands each fan-out item over as the payload with the list replaced by [item]; hookgate keeps
 * the payload and adds `item`. Templates are rewritten to match; a transform is told about.
 */
function importFanOut(mapping: JsonObject, key: string, where: string, notes: string[]): void {
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const first = new RegExp(`\\{\\{(\\s*)(?:payload\\.)?${escaped}\\[0\\]`, 'g');
  for (const field of TEMPLATED) {
    const text = mapping[field];
    const rewritten = typeof text === 'string' ? text.replace(first, '{{$1item') : text;
    if (rewritten === text) continue;
    mapping[field] = rewritten!;
    notes.push(`${where}.${field}: {{${key}[0]…}} rewritten as {{item…}}`);
  }
  // OpenClaw takes the first 200 items and drops the rest; hookgate refuses a longer list (400).
  if (mapping.maxItems === undefined) mapping.maxItems = 200;
  if (mapping.transform !== undefined)
    notes.push(
      `${where}: with forEach, the transform gets the item as ctx.item (and ctx.index); ` +
        `ctx.payload.${key} is the whole list, not [item]`,
    );
}

/** OpenClaw's gmail block in hookgate's terms: a full topic path split into project and topic. */
function importGmail(raw: Json, notes: string[]): Json {
  if (!isObject(raw)) return raw;
  const gmail: JsonObject = {};
  for (const key of GMAIL_KEPT) if (raw[key] !== undefined) gmail[key] = raw[key]!;
  const full = typeof raw.topic === 'string' ? /^projects\/([^/]+)\/topics\/([^/]+)$/.exec(raw.topic) : null;
  if (full) {
    gmail.project = full[1]!;
    gmail.topic = full[2]!;
  }
  const dropped = Object.keys(raw).filter((k) => !GMAIL_KEPT.includes(k));
  if (dropped.length)
    notes.push(
      `hooks.gmail.${dropped.join(', hooks.gmail.')} not carried over: hookgate's watcher pulls from ` +
        'Pub/Sub itself (run `hookgate webhooks gmail setup --help` for push mode)',
    );
  return gmail;
}

/** The whole file as it should be after the import, and what changed. */
export function planImport(file: JsonObject, configPath: string): { wanted: JsonObject; changes: string[] } {
  const hooks = file.hooks;
  if (!isObject(hooks)) throw new ConfigError(['there is no top-level hooks block to import'], configPath);
  const { internal, ...ingress } = hooks;
  if (Object.keys(ingress).every((k) => k === 'enabled'))
    throw new ConfigError(['the hooks block holds no webhook settings to import'], configPath);
  const plugins = file.plugins ?? {};
  if (!isObject(plugins)) throw new ConfigError(['plugins must be an object'], configPath);
  const entries = plugins.entries ?? {};
  if (!isObject(entries)) throw new ConfigError(['plugins.entries must be an object'], configPath);
  const entry = entries[PLUGIN_ID] ?? {};
  if (!isObject(entry)) throw new ConfigError([`plugins.entries.${PLUGIN_ID} must be an object`], configPath);
  if (isObject(entry.config) && Object.keys(entry.config).length > 0)
    throw new ConfigError(
      [`${TARGET} is already set; merge the hooks block into it by hand, or remove it and import again`],
      configPath,
    );

  const notes: string[] = [];
  const problems: string[] = [];
  const config: JsonObject = {};
  for (const key of MOVED) if (ingress[key] !== undefined) config[key] = ingress[key]!;
  if (Array.isArray(ingress.mappings))
    config.mappings = ingress.mappings.map((m, i) => importMapping(m, i, notes, problems));
  else if (ingress.mappings !== undefined) config.mappings = ingress.mappings;
  if (ingress.gmail !== undefined) config.gmail = importGmail(ingress.gmail, notes);
  const unknown = Object.keys(ingress).filter(
    (k) => !(MOVED as readonly string[]).includes(k) && k !== 'mappings' && k !== 'gmail',
  );
  for (const key of unknown) problems.push(`hooks.${key} is not a key hookgate knows; remove it and import again`);
  if (problems.length) throw new ConfigError(problems, configPath);

  const moved = Object.keys(ingress).filter((k) => k !== 'enabled');
  const changes = [
    `moved hooks.${moved.join(', hooks.')} to ${TARGET}`,
    `set hooks.enabled: false (OpenClaw's built-in hooks off${internal !== undefined ? '; hooks.internal kept' : ''})`,
  ];
  const nextPlugins: JsonObject = { ...plugins, entries: { ...entries, [PLUGIN_ID]: { ...entry, config } } };
  // An allow list without hookgate would keep the plugin unloaded; one that exists only grows.
  if (Array.isArray(plugins.allow) && !plugins.allow.includes(PLUGIN_ID)) {
    nextPlugins.allow = [...plugins.allow, PLUGIN_ID];
    changes.push(`added "${PLUGIN_ID}" to plugins.allow`);
  }
  const nextHooks: JsonObject = internal === undefined ? { enabled: false } : { enabled: false, internal };
  return {
    wanted: { ...file, hooks: nextHooks, plugins: nextPlugins },
    changes: [...changes, ...notes.map((n) => `note: ${n}`)],
  };
}

/**
 * The hooks block's text is moved whole (its comments go with it), then edited into the plugin's
 * config; what stays in `hooks` is edited down to the built-in hooks switched off.
 */
function moveHooksBlock(text: string, file: JsonObject, wanted: JsonObject, config: JsonObject): string {
  const target = ['plugins', 'entries', PLUGIN_ID, 'config'];
  const plugins = wanted.plugins as JsonObject;
  const { config: _config, ...entry } = (plugins.entries as JsonObject)[PLUGIN_ID] as JsonObject;
  const withEntry = { ...plugins, entries: { ...(plugins.entries as JsonObject), [PLUGIN_ID]: entry } };
  let out = editObject(text, [], file, { ...file, plugins: withEntry });
  out = setPropertySource(out, target, sourceAt(out, ['hooks'])!);
  const hooks = file.hooks as JsonObject;
  out = editObject(out, target, hooks, config);
  return editObject(out, ['hooks'], hooks, wanted.hooks as JsonObject);
}

/** The config text with the import applied; checked as the plugin checks it at start. */
export function applyImport(text: string, configPath: string): ImportResult {
  const file = parseConfigText(text, configPath);
  const { wanted, changes } = planImport(file, configPath);
  const plugins = wanted.plugins as JsonObject;
  const entry = (plugins.entries as JsonObject)[PLUGIN_ID] as JsonObject;
  const hooks = entry.config as JsonObject;
  const gateway = isObject(file.gateway) ? file.gateway : {};
  const gatewayToken =
    isObject(gateway.auth) && typeof gateway.auth.token === 'string' ? gateway.auth.token : undefined;
  resolveHooksConfig({ hooks, hooksKey: TARGET, gatewayToken }, path.dirname(configPath), configPath);

  const out = checkedEdit(
    text,
    wanted,
    () => moveHooksBlock(text, file, wanted, hooks),
    `move the hooks block to ${TARGET} by hand`,
    configPath,
  );
  return { text: out, changes };
}

export async function openClawCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'openclaw-config': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  const [sub] = positionals;
  if (values.help || !sub) {
    console.log(OPENCLAW_IMPORT_HELP);
    return 0;
  }
  if (sub !== 'import') throw new UsageError(`unknown openclaw command "${sub}"`);
  const configPath = openClawConfigPath(values['openclaw-config']);
  const text = await readFile(configPath, 'utf8');
  const { text: next, changes } = applyImport(text, configPath);
  await writeFileAtomic(configPath, next, { mode: (await stat(configPath)).mode & 0o777 });
  console.log(`${configPath}:`);
  for (const line of changes) console.log(`  ${line}`);
  console.log('Restart OpenClaw to apply: openclaw gateway restart');
  return 0;
}
