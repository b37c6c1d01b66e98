// The Gmail API calls the watcher (and setup) make, for the authorized user ("me"). Every call goes
// through the token source, so an expired token is refreshed and a 401 retried once.
import type { AccessTokenSource } from './access-token.ts';
import { GoogleApiError, googleRequest } from './google-request.ts';

export interface GmailPart {
  partId?: string;
  mimeType?: string;
  filename?: string;
  headers?: { name: string; value: string }[];
  body?: { size?: number; data?: string; attachmentId?: string };
  parts?: GmailPart[];
}

/** users.messages.get with format=full. */
export interface GmailMessageResource {
  id: string;
  threadId?: string;
  labelIds?: string[];
  snippet?: string;
  historyId?: string;
  internalDate?: string;
  payload?: GmailPart;
}

export interface WatchResult {
  historyId: string;
  /** Epoch milliseconds, as a string (Google's format). */
  expiration: string;
}

export interface HistoryResult {
  /** Ids of the messages added since the start id, oldest first, each once. */
  messageIds: string[];
  /**
   * The mailbox's history id when the first page was read: the next cursor. Everything up to it was
   * listed; anything added while the pages were read is listed again next time (the dedupe absorbs it).
   */
  historyId: string;
  pages: number;
}

export interface GmailApiOptions {
  baseUrl: string;
  tokens: AccessTokenSource;
  timeoutMs?: number;
  /** Ends every call under way at once (the watcher's stop). */
  signal?: AbortSignal;
}

/** Gmail caps history pages at 500 entries; fewer, larger pages mean fewer calls. */
const HISTORY_PAGE_SIZE = 500;
/** A guard against a server that keeps handing out page tokens. */
const MAX_HISTORY_PAGES = 10_000;

export class GmailApi {
  readonly #options: GmailApiOptions;

  constructor(options: GmailApiOptions) {
    this.#options = options;
  }

  #url(path: string): string {
    return `${this.#options.baseUrl}/users/me${path}`;
  }

  async #call<T>(
    step: string,
    path: string,
    init: {
      method?: 'GET' | 'POST';
      query?: Record<string, string | number | readonly string[] | undefined>;
      json?: unknown;
    } = {},
  ): Promise<T> {
    return this.#options.tokens.authorized((accessToken) =>
      googleRequest<T>({
        step,
        url: this.#url(path),
        accessToken,
        timeoutMs: this.#options.timeoutMs,
        signal: this.#options.signal,
        ...init,
      }),
    );
  }

  /** users.watch: start (or renew) push notifications of `labelIds` changes to the Pub/Sub topic. */
  async watch(topicName: string, labelIds: readonly string[]): Promise<WatchResult> {
    const body = await this.#call<{ historyId?: unknown; expiration?: unknown }>('gmail users.watch', '/watch', {
      method: 'POST',
      json: { topicName, labelIds, labelFilterBehavior: 'INCLUDE' },
    });
    if (typeof body.historyId !== 'string' && typeof body.historyId !== 'number') {
      throw new GoogleApiError({
        step: 'gmail users.watch',
        status: 200,
        reason: 'invalid_response',
        googleMessage: 'no historyId in the answer',
      });
    }
    return { historyId: String(body.historyId), expiration: String(body.expiration ?? '') };
  }

  /** users.stop: no more notifications for this mailbox. */
  async stop(): Promise<void> {
    await this.#call('gmail users.stop', '/stop', { method: 'POST', json: {} });
  }

  /**
   * users.history.list from `startHistoryId` through every page (historyTypes messageAdded). A
   * startHistoryId older than Gmail keeps is a GoogleApiError with status 404: resync then.
   */
  async listHistory(startHistoryId: string, labelId?: string): Promise<HistoryResult> {
    const seen = new Set<string>();
    const messageIds: string[] = [];
    let pageToken: string | undefined;
    let historyId: string | undefined;
    let pages = 0;
    do {
      const page = await this.#call<{ history?: unknown; nextPageToken?: unknown; historyId?: unknown }>(
        'gmail users.history.list',
        '/history',
        { query: { startHistoryId, historyTypes: 'messageAdded', labelId, pageToken, maxResults: HISTORY_PAGE_SIZE } },
      );
      pages++;
      for (const entry of Array.isArray(page.history) ? page.history : []) {
        const added = (entry as { messagesAdded?: unknown }).messagesAdded;
        for (const item of Array.isArray(added) ? added : []) {
          const id = (item as { message?: { id?: unknown } }).message?.id;
          if (typeof id === 'string' && id !== '' && !seen.has(id)) {
            seen.add(id);
            messageIds.push(id);
          }
        }
      }
      if (historyId === undefined && (typeof page.historyId === 'string' || typeof page.historyId === 'number')) {
        historyId = String(page.historyId);
      }
      pageToken = typeof page.nextPageToken === 'string' && page.nextPageToken !== '' ? page.nextPageToken : undefined;
    } while (pageToken !== undefined && pages < MAX_HISTORY_PAGES);
    return { messageIds, historyId: historyId ?? startHistoryId, pages };
  }

  /** users.messages.get, format full; undefined when the message is gone (404: deleted meanwhile). */
  async getMessage(id: string): Promise<GmailMessageResource | undefined> {
    try {
      return await this.#call<GmailMessageResource>('gmail users.messages.get', `/messages/${encodeURIComponent(id)}`, {
        query: { format: 'full' },
      });
    } catch (err) {
      if (err instanceof GoogleApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** users.messages.list: the ids of the newest `max` messages (with `labelId`), newest first. */
  async listMessages(max: number, labelId?: string): Promise<string[]> {
    const ids: string[] = [];
    let pageToken: string | undefined;
    do {
      const page = await this.#call<{ messages?: unknown; nextPageToken?: unknown }>(
        'gmail users.messages.list',
        '/messages',
        {
          query: { maxResults: Math.min(500, max - ids.length), labelIds: labelId ? [labelId] : undefined, pageToken },
        },
      );
      for (const m of Array.isArray(page.messages) ? page.messages : []) {
        const id = (m as { id?: unknown }).id;
        if (typeof id === 'string' && id !== '' && ids.length < max) ids.push(id);
      }
      pageToken = typeof page.nextPageToken === 'string' && page.nextPageToken !== '' ? page.nextPageToken : undefined;
    } while (pageToken !== undefined && ids.length < max);
    return ids;
  }

  /** users.getProfile: the mailbox's current history id. */
  async currentHistoryId(): Promise<string> {
    const body = await this.#call<{ historyId?: unknown }>('gmail users.getProfile', '/profile');
    return String(body.historyId ?? '');
  }
}
