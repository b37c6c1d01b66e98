// The built-in `gmail` preset: POST <hooks.path>/gmail with { source, messages: [...] } becomes one
// agent run named Gmail per message, each in a session of its own message id. Each message is its own
// delivery keyed by its Gmail id (forEach with a per-item dedupe key), so a batch sent again, or one
// overlapping an earlier batch, runs only the messages not seen before.
import { refuse } from '../errors.ts';
import { compileFirstError, formatErrors } from '../settings/schemas.ts';
import gmailPayloadSchema from '../../schema/gmail-payload.schema.json' with { type: 'json' };
import type { AgentSpec } from '../action.ts';
import { wrapExternalContent } from '../safety/index.ts';
import type { CompiledMapping, Preset, PresetContext, Producer } from './mapping.ts';
import { matchesSessionPrefix } from '../settings/session-prefixes.ts';
import { SECRET_HEADERS } from '../auth/secret-headers.ts';
import { compileTemplate } from './template.ts';

const validateGmailPayload = compileFirstError(gmailPayloadSchema);

/** hooks.gmail as the preset reads it (the watcher's own keys there are gmail/'s). */
export interface GmailPresetBlock {
  model?: string;
  thinking?: string;
  allowUnsafeExternalContent?: boolean;
}

interface GmailRunOptions {
  readonly model?: string;
  readonly thinking?: string;
  readonly allowUnsafeExternalContent: boolean;
}

interface GmailMessage {
  id?: string;
  sender?: string;
  from?: string;
  subject: string;
  snippet: string;
  body?: string;
}

/** Room for a batch of messages. */
const GMAIL_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** The runs' prompts are the messages, wrapped: about what came in, with room for the wrapping. */
const GMAIL_MAX_ACTION_BYTES = 2 * GMAIL_MAX_BODY_BYTES;
const BODY_MAX_CHARS = 20_000;
/** As many as the payload schema admits, and as the watcher posts in one request: runs from one request. */
const GMAIL_MAX_MESSAGES = 100;

/** The preset's runs: one per message, each checked before the first one runs. */
const GMAIL_PRODUCER: Producer = Object.freeze({
  name: 'gmail',
  checkItems: gmailMessages,
  build: (payload: Record<string, unknown>, mapping: CompiledMapping, item?: { readonly item: unknown }) => ({
    wakes: [],
    runs: item ? [gmailItemSpec(payload, item.item, mapping)] : gmailAgentSpecs(payload, mapping),
  }),
});

export const GMAIL_PRESET = {
  sessionKeyPrefix: 'hook:gmail:',
  mapping: Object.freeze({
    id: 'gmail',
    where: 'hooks.presets (gmail)',
    matchPath: 'gmail',
    action: 'agent',
    name: 'Gmail',
    maxBodyBytes: GMAIL_MAX_BODY_BYTES,
    maxActionBytes: GMAIL_MAX_ACTION_BYTES,
    allowUnsafeExternalContent: false,
    producer: GMAIL_PRODUCER,
    bodyFormat: 'json',
    maxParts: 0,
    hiddenHeaders: SECRET_HEADERS,
    forEach: Object.freeze({
      path: 'messages',
      read: (payload: unknown) => (payload as { messages?: unknown }).messages,
      maxItems: GMAIL_MAX_MESSAGES,
    }),
    dedupeKey: compileTemplate('{{item.id}}'),
  } satisfies CompiledMapping),
};

/** hooks.presets "gmail": its session keys must be allowed, and hooks.gmail.model must be a known model. */
export const GMAIL: Preset = Object.freeze({
  name: 'gmail',
  mapping: GMAIL_PRESET.mapping,
  compile(
    { root, allowedSessionKeyPrefixes, presetSettings, host }: PresetContext,
    problems: string[],
  ): CompiledMapping {
    const gmailRuns = runOptions(presetSettings.get('gmail'));
    const prefix = GMAIL_PRESET.sessionKeyPrefix;
    if (!matchesSessionPrefix(prefix, allowedSessionKeyPrefixes)) {
      problems.push(
        `${root}.presets: the gmail preset uses session keys "${prefix}<id>", which ${root}.allowedSessionKeyPrefixes does not allow`,
      );
    }
    if (gmailRuns?.model !== undefined && host.agents.models && !host.agents.models.includes(gmailRuns.model)) {
      problems.push(`${root}.gmail.model "${gmailRuns.model}" is not in agents.defaults.models`);
    }
    return gmailRuns ? gmailPresetMapping(gmailRuns) : GMAIL_PRESET.mapping;
  },
});

/** hooks.gmail's keys for the runs (the schema has checked their types); undefined when there is no block. */
function runOptions(block: unknown): GmailRunOptions | undefined {
  if (typeof block !== 'object' || block === null) return undefined;
  const b = block as GmailPresetBlock;
  return { model: b.model, thinking: b.thinking, allowUnsafeExternalContent: b.allowUnsafeExternalContent === true };
}

/** The preset with hooks.gmail's model, thinking and allowUnsafeExternalContent for its runs. */
function gmailPresetMapping(runs: GmailRunOptions): CompiledMapping {
  if (runs.model === undefined && runs.thinking === undefined && !runs.allowUnsafeExternalContent)
    return GMAIL_PRESET.mapping;
  return Object.freeze({
    ...GMAIL_PRESET.mapping,
    model: runs.model === undefined ? undefined : compileTemplate(runs.model),
    thinking: runs.thinking,
    allowUnsafeExternalContent: runs.allowUnsafeExternalContent,
  });
}

/** The payload's messages, all checked before any of them runs: a 400 names the first bad one. */
export function gmailMessages(payload: Record<string, unknown>): GmailMessage[] {
  if (!validateGmailPayload(payload)) {
    throw refuse.invalidPayload(formatErrors(validateGmailPayload.errors).join('; '));
  }
  const messages = (payload as { messages: GmailMessage[] }).messages;
  messages.forEach((msg, i) => {
    if (msg.sender === undefined && msg.from === undefined) {
      throw refuse.invalidPayload(`messages[${i}].sender (or from) is required`);
    }
  });
  return messages;
}

function sourceOf(payload: Record<string, unknown>): string {
  return typeof payload.source === 'string' && payload.source.trim() ? payload.source.trim() : 'gmail';
}

export function gmailAgentSpecs(payload: Record<string, unknown>, mapping?: CompiledMapping): AgentSpec[] {
  const source = sourceOf(payload);
  return gmailMessages(payload).map((msg) => gmailAgentSpec(msg, source, mapping));
}

/** The run of one message (already checked by gmailMessages). */
export function gmailAgentSpec(msg: GmailMessage, source: string, mapping?: CompiledMapping): AgentSpec {
  const sender = msg.sender ?? msg.from;
  const lines = [`New email from ${sender}`, `Subject: ${msg.subject}`, '', msg.snippet];
  if (msg.body) lines.push('', msg.body.length > BODY_MAX_CHARS ? `${msg.body.slice(0, BODY_MAX_CHARS)}…` : msg.body);
  const unsafe = mapping?.allowUnsafeExternalContent === true;
  return {
    message: unsafe
      ? lines.join('\n')
      : wrapExternalContent(lines.join('\n'), { source, hookName: 'Gmail', kind: 'email' }),
    name: 'Gmail',
    mappingSessionKey: msg.id ? `${GMAIL_PRESET.sessionKeyPrefix}${msg.id}` : undefined,
    alreadyWrapped: !unsafe,
    allowUnsafeExternalContent: unsafe,
    model: mapping?.model?.source,
    thinking: mapping?.thinking,
    source,
  };
}

/** One forEach item of the preset as its action. */
export function gmailItemSpec(payload: Record<string, unknown>, item: unknown, mapping?: CompiledMapping): AgentSpec {
  return gmailAgentSpec(item as GmailMessage, sourceOf(payload), mapping);
}
