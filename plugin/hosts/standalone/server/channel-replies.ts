// How the standalone gateway's replies reach chats, as the core's reply queue asks (plugin/replies/):
// single tries through the channel senders (split, paced), and every reply and change of its state
// written to the outbox, the history the admin API shows (`pending` before the first try, then
// `sent` with the platform's message ids, `retrying` or `failed`). A channel without credentials
// only records. Senders live as long as their config block: a reload keeps an unchanged channel's
// sender and pacer (the pacing must see every send to a platform), and tries already under way on a
// replaced one finish there.
import type { ChannelName, HostReplies, ReplyEntry, ReplyState, SendResult } from '../../../host.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';
import type { Channel, ResolvedChannels } from '../../../../channels/index.ts';
import type { Outbox } from '../storage/index.ts';

export interface ChannelRepliesOptions {
  outbox: Outbox;
  metrics: () => GatewayMetrics | undefined;
  channels: ResolvedChannels;
  /** The recipient of a reply whose route names none (channels.<name>.defaultTo). */
  defaultTo: (channel: ChannelName) => string | undefined;
}

export class ChannelReplies implements HostReplies {
  readonly #outbox: Outbox;
  readonly #metrics: () => GatewayMetrics | undefined;
  readonly #defaultTo: (channel: ChannelName) => string | undefined;
  #senders: ReadonlyMap<string, Channel>;
  #redactor: ResolvedChannels['redactor'];
  /** Channels a reload replaced while tries still waited on their pacer: they drain on the old sender. */
  readonly #retired = new Set<Channel>();
  readonly history: HostReplies['history'];

  constructor(opts: ChannelRepliesOptions) {
    this.#outbox = opts.outbox;
    this.#metrics = opts.metrics;
    this.#defaultTo = opts.defaultTo;
    this.#senders = opts.channels.senders;
    this.#redactor = opts.channels.redactor;
    this.history = {
      added: (entry) => this.#added(entry),
      changed: (entry, state, moved) => this.#changed(entry, state, moved),
    };
  }

  sends(channel: ChannelName): boolean {
    return this.#senders.has(channel);
  }

  defaultTo(channel: ChannelName): string | undefined {
    return this.#defaultTo(channel);
  }

  async send(
    delivery: Parameters<HostReplies['send']>[0],
    options: Parameters<HostReplies['send']>[1],
  ): Promise<SendResult> {
    const channel = this.#senders.get(delivery.channel);
    if (!channel) return noLongerSends(delivery.channel);
    try {
      return await channel.deliver(delivery.to, delivery.text, options);
    } catch (err) {
      // A sender reports failures as results; a throw is a fault of ours, described without secrets.
      const description = this.#redactor.clean(err instanceof Error ? err.message : String(err));
      return { status: 'failed', retryable: false, description, messageIds: [], sentParts: 0 };
    }
  }

  /**
   * A reload's channels: a channel whose block and secrets are unchanged keeps its sender and pacer;
   * a changed one gets the new sender for its next try, while tries under way finish on the old one.
   * Returns the names that changed.
   */
  useChannels(next: ResolvedChannels): string[] {
    const merged = new Map<string, Channel>();
    const changed: string[] = [];
    for (const [name, fresh] of next.senders) {
      const old = this.#senders.get(name);
      const keep = old !== undefined && old.fingerprint === fresh.fingerprint;
      merged.set(name, keep ? old : fresh);
      if (!keep) changed.push(name);
    }
    for (const [name, old] of this.#senders) {
      if (merged.get(name) === old) continue;
      if (!next.senders.has(name)) changed.push(name);
      this.#retired.add(old);
    }
    for (const old of this.#retired) if (old.waiting === 0) this.#retired.delete(old);
    this.#senders = merged;
    this.#redactor = next.redactor;
    return changed;
  }

  /** Ends the pacers' waits: a try still waiting for its turn ends as one that may pass. */
  stop(): void {
    for (const channel of [...this.#senders.values(), ...this.#retired]) channel.close();
  }

  async #added(entry: ReplyEntry): Promise<void> {
    await this.#outbox.append(entry);
    if (entry.status === 'recorded') this.#metrics()?.delivery(entry.channel, 'recorded');
  }

  async #changed(entry: ReplyEntry & { id: string }, state: ReplyState, moved: boolean): Promise<void> {
    await this.#outbox.settle(entry.id, state);
    if (!moved || state.status === 'pending') return;
    const settled = state.status === 'sent' || state.status === 'failed';
    this.#metrics()?.delivery(entry.channel, state.status, settled ? secondsSince(entry.at) : undefined);
  }
}

function secondsSince(iso: string): number | undefined {
  const at = Date.parse(iso);
  return Number.isNaN(at) ? undefined : Math.max(0, (Date.now() - at) / 1000);
}

/** A reply whose channel lost its credentials (a reload, or a start with another config). */
function noLongerSends(channel: string): SendResult {
  return {
    status: 'failed',
    retryable: false,
    description: `channels.${channel} no longer has credentials: nothing was sent`,
    messageIds: [],
    sentParts: 0,
  };
}
