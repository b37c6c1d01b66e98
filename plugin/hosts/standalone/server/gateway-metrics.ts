// The standalone gateway's own series on the plugin's registry: what its outbox, channel senders and
// Gmail watcher do. The core counts hook requests; these are events only this host has. Metrics off
// (no registry): every method does nothing.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { GMAIL_FAILURE_STAGES, type GmailFailureStage } from '../../../../gmail/index.ts';

export type DeliveryOutcome = 'sent' | 'retrying' | 'failed' | 'recorded';

const DELIVERY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

export interface GatewayMetrics {
  /**
   * A reply delivered to a channel (sent, failed), scheduled to be tried again (retrying, once per
   * retry) or only recorded; seconds from accepted to its final outcome.
   */
  delivery(channel: string, outcome: DeliveryOutcome, seconds?: number): void;
  gmailNotifications(count: number): void;
  gmailError(stage: GmailFailureStage): void;
}

const nothing = (): void => {};

export function gatewayMetrics(
  registry: Registry | undefined,
  gauges: { outboxSize: () => number; deliveriesPending: () => number },
): GatewayMetrics {
  if (!registry) return { delivery: nothing, gmailNotifications: nothing, gmailError: nothing };
  const registers = [registry];
  const gauge = (name: string, help: string, read: () => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });
  };
  gauge('hookgate_outbox_size', 'Deliveries written to the outbox since the gateway started.', gauges.outboxSize);
  gauge(
    'hookgate_deliveries_pending',
    'Deliveries to channels that send, waiting for their outcome (paced, being sent, or retrying).',
    gauges.deliveriesPending,
  );
  const deliveries = new Counter({
    name: 'hookgate_deliveries_total',
    help: 'Replies delivered to a channel, by channel and outcome (sent; retrying: a failed try to be tried again; failed: a dead letter; recorded: a channel without credentials).',
    labelNames: ['channel', 'outcome'] as const,
    registers,
  });
  const deliverySeconds = new Histogram({
    name: 'hookgate_delivery_duration_seconds',
    help: 'Time from a reply handed to a channel to its final outcome (all parts sent, or failed), pacing and retries included.',
    labelNames: ['channel'] as const,
    buckets: DELIVERY_BUCKETS,
    registers,
  });
  const notifications = new Counter({
    name: 'hookgate_gmail_notifications_total',
    help: 'Gmail push notifications received by the watcher.',
    registers,
  });
  const gmailErrors = new Counter({
    name: 'hookgate_gmail_errors_total',
    help: `Gmail watcher errors, by stage (${GMAIL_FAILURE_STAGES.join(', ')}).`,
    labelNames: ['stage'] as const,
    registers,
  });
  return {
    delivery(channel, outcome, seconds) {
      deliveries.labels(channel, outcome).inc();
      if (seconds !== undefined) deliverySeconds.labels(channel).observe(seconds);
    },
    gmailNotifications: (count) => notifications.inc(count),
    gmailError: (stage) => gmailErrors.labels(stage).inc(),
  };
}
