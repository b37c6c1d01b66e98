// Pull and acknowledge on a Pub/Sub subscription (pull mode: no public URL needed). A pull waits
// until messages arrive or Google's long-poll ends; `signal` cuts it short on shutdown.
import type { AccessTokenSource } from './access-token.ts';
import { googleRequest } from './google-request.ts';

export interface PulledMessage {
  ackId: string;
  messageId: string;
  /** The decoded `data` (for Gmail: JSON with emailAddress and historyId). */
  data: string;
  publishTime?: string;
}

export interface PubSubPullOptions {
  baseUrl: string;
  project: string;
  subscription: string;
  tokens: AccessTokenSource;
  /** Ends an acknowledge under way at once (the watcher's stop); a pull takes its own. */
  signal?: AbortSignal;
}

/** Long enough for Google's long-poll, short enough to notice a dead connection. */
const PULL_TIMEOUT_MS = 90_000;

export class PubSubPull {
  readonly #options: PubSubPullOptions;

  constructor(options: PubSubPullOptions) {
    this.#options = options;
  }

  get subscriptionPath(): string {
    const { project, subscription } = this.#options;
    return `projects/${encodeURIComponent(project)}/subscriptions/${encodeURIComponent(subscription)}`;
  }

  async pull(maxMessages: number, signal?: AbortSignal): Promise<PulledMessage[]> {
    const body = await this.#options.tokens.authorized((accessToken) =>
      googleRequest<{ receivedMessages?: unknown }>({
        step: 'pubsub pull',
        url: `${this.#options.baseUrl}/${this.subscriptionPath}:pull`,
        accessToken,
        json: { maxMessages },
        timeoutMs: PULL_TIMEOUT_MS,
        signal,
      }),
    );
    const out: PulledMessage[] = [];
    for (const item of Array.isArray(body.receivedMessages) ? body.receivedMessages : []) {
      const r = item as { ackId?: unknown; message?: { data?: unknown; messageId?: unknown; publishTime?: unknown } };
      if (typeof r.ackId !== 'string' || r.ackId === '') continue;
      const data = typeof r.message?.data === 'string' ? Buffer.from(r.message.data, 'base64').toString('utf8') : '';
      out.push({
        ackId: r.ackId,
        messageId: typeof r.message?.messageId === 'string' ? r.message.messageId : '',
        data,
        publishTime: typeof r.message?.publishTime === 'string' ? r.message.publishTime : undefined,
      });
    }
    return out;
  }

  async acknowledge(ackIds: readonly string[]): Promise<void> {
    if (ackIds.length === 0) return;
    await this.#options.tokens.authorized((accessToken) =>
      googleRequest({
        step: 'pubsub acknowledge',
        url: `${this.#options.baseUrl}/${this.subscriptionPath}:acknowledge`,
        accessToken,
        json: { ackIds },
        signal: this.#options.signal,
      }),
    );
  }
}
