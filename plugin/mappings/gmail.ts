// The built-in `gmail` preset: POST <hooks.path>/gmail with { source, messages: [...] } becomes one
// agent run named Gmail per message, each in a session of its own message id.
import { refuse } from '../errors.ts';
import { formatErrors, validateGmailPayload } from '../config/schemas.ts';
import type { AgentSpec } from '../actions/action.ts';
import { wrapExternalContent } from '../safety/external-content.ts';
import type { CompiledMapping } from './mapping.ts';
import { SECRET_HEADERS } from '../auth/secret-headers.ts';

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
const BODY_MAX_CHARS = 20_000;

export const GMAIL_PRESET = {
  sessionKeyPrefix: 'hook:gmail:',
  mapping: Object.freeze({
    id: 'gmail',
    where: 'hooks.presets (gmail)',
    matchPath: 'gmail',
    action: 'agent',
    name: 'Gmail',
    maxBodyBytes: GMAIL_MAX_BODY_BYTES,
    allowUnsafeExternalContent: false,
    preset: 'gmail',
    bodyFormat: 'json',
    hiddenHeaders: SECRET_HEADERS,
  } satisfies CompiledMapping),
};

export function gmailAgentSpecs(payload: Record<string, unknown>): AgentSpec[] {
  if (!validateGmailPayload(payload)) {
    throw refuse.invalidPayload(formatErrors(validateGmailPayload.errors).join('; '));
  }
  const messages = (payload as { messages: GmailMessage[] }).messages;
  const source = typeof payload.source === 'string' && payload.source.trim() ? payload.source.trim() : 'gmail';
  return messages.map((msg, i) => {
    const sender = msg.sender ?? msg.from;
    if (sender === undefined) throw refuse.invalidPayload(`messages[${i}].sender (or from) is required`);
    const lines = [`New email from ${sender}`, `Subject: ${msg.subject}`, '', msg.snippet];
    if (msg.body) lines.push('', msg.body.length > BODY_MAX_CHARS ? `${msg.body.slice(0, BODY_MAX_CHARS)}…` : msg.body);
    return {
      message: wrapExternalContent(lines.join('\n'), { source, hookName: 'Gmail', kind: 'email' }),
      name: 'Gmail',
      mappingSessionKey: msg.id ? `${GMAIL_PRESET.sessionKeyPrefix}${msg.id}` : undefined,
      alreadyWrapped: true,
      source,
    };
  });
}
