// One sync: from the stored cursor, every page of history, each new message fetched and turned into
// text (SENT, DRAFT, SPAM, TRASH skipped), posted to the hook in chunks, and only then the cursor moved.
// A cursor older than Gmail's history (404) resyncs the newest `resyncMessages` messages instead.
import type { GmailApi } from './gmail-api.ts';
import { GoogleApiError } from './google-request.ts';
import { messageToText, skippedLabel, type HookMessage, type MessageTextOptions } from './message-to-text.ts';

export interface SyncInput {
  gmail: GmailApi;
  /** The cursor to read from. */
  cursor: string;
  label: string;
  resyncMessages: number;
  text: MessageTextOptions;
  /** Posts a chunk of messages; throws unless the hook answered 2xx to all of it. */
  post: (messages: HookMessage[]) => Promise<void>;
  /** Progress of long work (a resync, a long history), for a line on stderr. */
  progress?: (done: number, total: number, what: string) => void;
}

export interface SyncResult {
  /** The cursor to store now that everything listed was posted. */
  cursor: string;
  delivered: number;
  skipped: number;
  resynced: boolean;
  pages: number;
}

/** Messages fetched at a time, and posted together (the poster splits by size). */
const CHUNK = 25;
/** Concurrent messages.get calls. */
const FETCH_CONCURRENCY = 5;

export async function syncHistory(input: SyncInput): Promise<SyncResult> {
  let ids: string[];
  let cursor: string;
  let resynced = false;
  let pages = 0;
  try {
    const history = await input.gmail.listHistory(input.cursor, input.label);
    ids = history.messageIds;
    cursor = history.historyId;
    pages = history.pages;
  } catch (err) {
    if (!(err instanceof GoogleApiError) || err.status !== 404) throw err;
    // The cursor fell off Gmail's history: take the current id first, so that nothing arriving while
    // the newest messages are listed is skipped next time.
    cursor = await input.gmail.currentHistoryId();
    ids = input.resyncMessages > 0 ? (await input.gmail.listMessages(input.resyncMessages, input.label)).reverse() : [];
    resynced = true;
  }
  let delivered = 0;
  let skipped = 0;
  for (let i = 0; i < ids.length; i += CHUNK) {
    const fetched = await fetchAll(input.gmail, ids.slice(i, i + CHUNK));
    const messages: HookMessage[] = [];
    for (const m of fetched) {
      if (m === undefined || skippedLabel(m)) skipped++;
      else messages.push(messageToText(m, input.text));
    }
    if (messages.length) await input.post(messages);
    delivered += messages.length;
    if (ids.length > CHUNK)
      input.progress?.(Math.min(i + CHUNK, ids.length), ids.length, resynced ? 'resync' : 'history');
  }
  return { cursor, delivered, skipped, resynced, pages };
}

async function fetchAll(gmail: GmailApi, ids: string[]) {
  const out = new Array<Awaited<ReturnType<GmailApi['getMessage']>>>(ids.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ids.length) {
      const i = next++;
      out[i] = await gmail.getMessage(ids[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(FETCH_CONCURRENCY, ids.length) }, worker));
  return out;
}
