// A Gmail message (users.messages.get, format full) as the gmail preset takes it: id, From, Subject,
// snippet and the text body (the plain part preferred, else the HTML part stripped to text), base64url
// decoded and clipped to hooks.gmail.maxBytes on a character boundary. Messages that are not incoming
// mail (SENT, DRAFT) or are junk (SPAM, TRASH) are skipped.
import { clipUtf8 } from './clip-utf8.ts';
import type { GmailMessageResource, GmailPart } from './gmail-api.ts';
import { htmlToText } from './html-to-text.ts';

export const SKIPPED_LABELS: readonly string[] = ['SENT', 'DRAFT', 'SPAM', 'TRASH'];

/** One entry of the preset's `messages`. */
export interface HookMessage {
  id: string;
  from: string;
  subject: string;
  snippet: string;
  body?: string;
}

export interface MessageTextOptions {
  includeBody: boolean;
  maxBytes: number;
}

/** The label that makes this message one to skip, if any. */
export function skippedLabel(message: GmailMessageResource): string | undefined {
  return message.labelIds?.find((l) => SKIPPED_LABELS.includes(l));
}

export function messageToText(message: GmailMessageResource, options: MessageTextOptions): HookMessage {
  const headers = message.payload?.headers ?? [];
  const header = (name: string): string =>
    headers.find((h) => typeof h?.name === 'string' && h.name.toLowerCase() === name)?.value?.trim() ?? '';
  const out: HookMessage = {
    id: message.id,
    from: clipUtf8(header('from') || '(unknown sender)', 1024).text,
    subject: clipUtf8(header('subject') || '(no subject)', 2048).text,
    snippet: decodeSnippet(message.snippet ?? ''),
  };
  if (options.includeBody && message.payload) {
    const body = bodyText(message.payload);
    if (body) {
      const { text, clipped } = clipUtf8(body, options.maxBytes);
      out.body = clipped ? `${text}\n[clipped at ${options.maxBytes} bytes]` : text;
    }
  }
  return out;
}

/** Gmail's snippet is HTML-escaped ("&#39;"). */
function decodeSnippet(snippet: string): string {
  return clipUtf8(htmlToText(snippet), 2048).text;
}

/** The plain text of the first text/plain part, else of the first text/html part, depth first. */
function bodyText(root: GmailPart): string {
  const plain = findPart(root, 'text/plain');
  if (plain) return decodePart(plain).replace(/\r\n?/g, '\n').trim();
  const html = findPart(root, 'text/html');
  return html ? htmlToText(decodePart(html)) : '';
}

function findPart(part: GmailPart, mimeType: string, depth = 0): GmailPart | undefined {
  if (depth > 20) return undefined;
  const type = (part.mimeType ?? '').toLowerCase();
  // An attached text file is not the body.
  if (type === mimeType && !part.filename && typeof part.body?.data === 'string') return part;
  for (const child of part.parts ?? []) {
    const found = findPart(child, mimeType, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** Gmail hands the part's bytes in its declared charset (mostly UTF-8; old mail ISO-8859-1 and such). */
function decodePart(part: GmailPart): string {
  const bytes = Buffer.from(part.body?.data ?? '', 'base64url');
  const type = part.headers?.find((h) => h?.name?.toLowerCase() === 'content-type')?.value ?? '';
  const charset = /charset\s*=\s*"?([A-Za-z0-9_.:-]+)"?/i.exec(type)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return bytes.toString('utf8');
  }
}
