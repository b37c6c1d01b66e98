// Replies on their way to chat channels. A channel with credentials sends: the delivery is written
// `pending` to the outbox before the first attempt, sent through the channel senders (split, paced,
// 429 waits honoured) and its outcome appended: `sent` with the platform's message ids, or `failed`
// with the platform's description, secrets removed. A channel without credentials only records.
// The run that produced the reply does not wait for the send, only for the pending entry.

import { randomUUID } from 'node:crypto';
import type { Delivery, Logger } from '../../../host.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import type { ResolvedChannels } from '../../../../channels/index.ts';
import type { Outbox } from '../storage/index.ts';
import { errorMessage } from '../../../util/errors.ts';

export class ChannelDeliveries {
  readonly #outbox: Outbox;
  readonly #logger: Logger;
  readonly #metrics: GatewayMetrics;
  readonly #channels: ResolvedChannels;
  readonly #sending = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  #closing = false;

  constructor(outbox: Outbox, logger: Logger, metrics: GatewayMetrics, channels: ResolvedChannels) {
    this.#outbox = outbox;
    this.#logger = logger;
    this.#metrics = metrics;
    this.#channels = channels;
  }

  /** Resolves once the delivery is in the outbox (pending or recorded); the send goes on after. */
  async deliver(d: Delivery): Promise<void> {
    const channel = this.#channels.senders.get(d.channel);
    const entry = {
      channel: d.channel,
      ...(d.to !== undefined ? { to: d.to } : {}),
      text: d.text,
      runId: d.runId,
      agentId: d.agentId,
    };
    if (!channel) {
      await this.#outbox.append({ ...entry, status: 'recorded' });
      this.#metrics.delivery(d.channel, 'recorded');
      return;
    }
    const id = randomUUID();
    const started = performance.now();
    await this.#outbox.append({ id, ...entry, status: 'pending' });
    // Accepted while stopping: it stays pending, for the next start to send.
    if (this.#closing) return;
    const sending = channel
      .deliver(d.to, d.text, { signal: this.#stop.signal })
      .then(async (result) => {
        // A send refused because the gateway is stopping stays pending.
        if (this.#closing && result.status === 'failed' && result.retryable) return;
        const seconds = (performance.now() - started) / 1000;
        if (result.status === 'sent') {
          await this.#outbox.settle(id, { status: 'sent', messageIds: result.messageIds });
          this.#metrics.delivery(d.channel, 'sent', seconds);
          return;
        }
        await this.#outbox.settle(id, {
          status: 'failed',
          error: result.description,
          ...(result.messageIds.length ? { messageIds: result.messageIds } : {}),
        });
        this.#metrics.delivery(d.channel, 'failed', seconds);
        this.#logger.warn('delivery failed', {
          channel: d.channel,
          runId: d.runId,
          deliveryId: id,
          partsSent: result.sentParts,
          parts: result.parts,
          reason: result.description,
        });
      })
      .catch((err: unknown) => {
        const reason = this.#channels.redactor.clean(errorMessage(err));
        this.#logger.error('delivery could not be recorded', { channel: d.channel, deliveryId: id, reason });
      })
      .finally(() => this.#sending.delete(sending));
    this.#sending.add(sending);
  }

  /** Deliveries waiting for their outcome in this process. */
  get pending(): number {
    return this.#outbox.pending;
  }

  /** Stops taking turns; sends under way get `graceMs` to finish, then are cut (they stay pending). */
  async close(graceMs: number): Promise<void> {
    this.#closing = true;
    for (const channel of this.#channels.senders.values()) channel.close();
    const all = Promise.all([...this.#sending]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    this.#stop.abort();
    await all;
  }
}
