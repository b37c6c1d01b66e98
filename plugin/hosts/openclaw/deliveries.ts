// Replies delivered through OpenClaw's channel adapters, tried again on hooks.retry when the channel
// reports a failure that may pass (network, 429, 5xx; a platform's announced wait honoured). The first
// try is made before the run ends: a failure that will not pass there is the run's error, as before.
// A delivery still failing after its last try is a dead letter (`deadLetter`, which the service wires
// to the core's failure book). Waiting deliveries are kept in <stateDir>/deliveries.jsonl: a restart
// resumes them.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Delivery, DeliveryFact, DeliveryReceipt, Logger } from '../../host.ts';
import { DueQueue, mayRetry, retryDelayMs, StateFile, type RetryPolicy } from '../../kits/admin.ts';
import { errorMessage } from '../../util/errors.ts';
import { classifyDeliveryError } from './passing-failure.ts';

/** A delivery waiting for its next try, as kept on disk. */
export interface WaitingDelivery {
  delivery: Delivery;
  /** The run's hook, as the failure book names it. */
  hook: string;
  /** Tries so far. */
  tries: number;
  firstAt: string;
  lastError: string;
  /** When the next try is due (ms since the epoch). */
  nextAt: number;
}

/** A delivery that used its tries: what the failure book records. */
export interface DeliveryDeadLetter {
  kind: 'delivery';
  runId: string;
  hook: string;
  agentId: string;
  channel: Delivery['channel'];
  to?: string;
  /** The reply, for a replay to send again. */
  text: string;
  attempts: number;
  lastError: string;
  firstAt: string;
  lastAt: string;
}

export interface DeliveryOptions {
  /** One send through the channel's adapter (in the service's context); throws what the channel threw. */
  send(delivery: Delivery): Promise<void>;
  retry(): Readonly<RetryPolicy>;
  /** The hook (run name) of a run, while the run is known. */
  hookOf(runId: string): string | undefined;
  deadLetter(letter: DeliveryDeadLetter): void;
  /** Told of each next try scheduled (hookgate_retries_total{kind="delivery"}). */
  retryScheduled(): void;
  logger: Logger;
  /** The plugin's state dir; undefined: waiting deliveries live in memory only. */
  stateDir: string | undefined;
}

function isWaiting(value: unknown): value is WaitingDelivery {
  const v = value as Partial<WaitingDelivery> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.tries === 'number' &&
    typeof v.hook === 'string' &&
    typeof v.nextAt === 'number' &&
    typeof v.firstAt === 'string' &&
    typeof v.lastError === 'string' &&
    typeof v.delivery?.runId === 'string' &&
    typeof v.delivery.channel === 'string' &&
    typeof v.delivery.text === 'string'
  );
}

/** A delivery whose run is no longer known (not expected: it fails first while its run is). */
const UNKNOWN_HOOK = 'unknown';

/** Credentials a channel library may quote in an error: bot tokens, Slack tokens, auth headers, URLs' paths. */
const CREDENTIALS: readonly [RegExp, string][] = [
  [/\b\d{5,}:[A-Za-z0-9_-]{20,}/g, '[redacted]'],
  [/\bxox[a-z]-[A-Za-z0-9-]+/g, '[redacted]'],
  [/\b(Bearer|Bot|Basic)\s+\S+/gi, '$1 [redacted]'],
  [/\b(https?:\/\/[^/\s]+)\/\S*/gi, '$1/…'],
];

/** One reason line, without the platform's echo of what was sent or a credential it quoted. */
export function reasonOf(err: unknown): string {
  let line = errorMessage(err).split('\n', 1)[0]!;
  for (const [pattern, replacement] of CREDENTIALS) line = line.replace(pattern, replacement);
  return line.slice(0, 300);
}

export class OpenClawDeliveries {
  readonly #queue: DueQueue<string>;
  /** Outcomes still awaited by this process's runs (a resumed delivery has none). */
  readonly #outcomes = new Map<string, (status: 'sent' | 'failed') => void>();

  private constructor(
    private readonly options: DeliveryOptions,
    private readonly file: StateFile<WaitingDelivery>,
  ) {
    this.#queue = new DueQueue((id) => {
      this.#retry(id).catch((err: unknown) =>
        options.logger.error('a reply delivery could not be tried again', { runId: id, reason: reasonOf(err) }),
      );
    });
    for (const [id, waiting] of file.records) this.#queue.add(id, waiting.nextAt, id);
  }

  static async open(options: DeliveryOptions): Promise<OpenClawDeliveries> {
    let file: string | undefined;
    if (options.stateDir !== undefined) {
      await mkdir(options.stateDir, { recursive: true, mode: 0o700 });
      file = path.join(options.stateDir, 'deliveries.jsonl');
    }
    return new OpenClawDeliveries(options, await StateFile.open(file, isWaiting, options.logger));
  }

  /** Deliveries not yet settled after a failed try (waiting, or being tried again). */
  get waiting(): number {
    return this.file.size;
  }

  /**
   * The first try. Sent: the receipt says so. A failure that may pass: the next try is scheduled (on
   * disk before this resolves) and the receipt settles after the last. Any other failure throws.
   */
  async deliver(delivery: Delivery): Promise<DeliveryReceipt> {
    const fact = (status: DeliveryFact['status']): DeliveryFact => ({
      channel: delivery.channel,
      ...(delivery.to ? { to: delivery.to } : {}),
      status,
    });
    try {
      await this.options.send(delivery);
      return { outcome: Promise.resolve(fact('sent')) };
    } catch (err) {
      const passing = classifyDeliveryError(err);
      if (!passing.retryable || !mayRetry(this.options.retry(), 1)) throw err;
      const id = delivery.runId;
      const outcome = new Promise<DeliveryFact>((resolve) => this.#outcomes.set(id, (status) => resolve(fact(status))));
      await this.#schedule(id, {
        delivery,
        hook: this.options.hookOf(id) ?? UNKNOWN_HOOK,
        tries: 1,
        firstAt: new Date().toISOString(),
        lastError: reasonOf(err),
        nextAt: Date.now() + retryDelayMs(this.options.retry(), 1, passing.retryAfterMs),
      });
      return { outcome };
    }
  }

  async #schedule(id: string, waiting: WaitingDelivery): Promise<void> {
    await this.file.put(id, waiting);
    this.#queue.add(id, waiting.nextAt, id);
    this.options.retryScheduled();
    this.options.logger.warn('a reply delivery failed; trying again later', {
      runId: id,
      channel: waiting.delivery.channel,
      tries: waiting.tries,
      reason: waiting.lastError,
    });
  }

  async #retry(id: string): Promise<void> {
    const waiting = this.file.get(id);
    if (!waiting) return;
    const tries = waiting.tries + 1;
    try {
      await this.options.send(waiting.delivery);
      await this.#settle(id, 'sent');
      return;
    } catch (err) {
      const passing = classifyDeliveryError(err);
      const lastError = reasonOf(err);
      if (passing.retryable && mayRetry(this.options.retry(), tries)) {
        const nextAt = Date.now() + retryDelayMs(this.options.retry(), tries, passing.retryAfterMs);
        await this.#schedule(id, { ...waiting, tries, lastError, nextAt });
        return;
      }
      const { delivery } = waiting;
      this.options.deadLetter({
        kind: 'delivery',
        runId: delivery.runId,
        hook: waiting.hook,
        agentId: delivery.agentId,
        channel: delivery.channel,
        ...(delivery.to ? { to: delivery.to } : {}),
        text: delivery.text,
        attempts: tries,
        lastError,
        firstAt: waiting.firstAt,
        lastAt: new Date().toISOString(),
      });
      await this.#settle(id, 'failed');
    }
  }

  async #settle(id: string, status: 'sent' | 'failed'): Promise<void> {
    try {
      await this.file.remove(id);
    } catch (err) {
      this.options.logger.error('could not note a delivery as done', { runId: id, reason: reasonOf(err) });
    }
    this.#outcomes.get(id)?.(status);
    this.#outcomes.delete(id);
  }

  /** Stops trying; what waits stays on disk for the next start. */
  async close(): Promise<void> {
    this.#queue.close();
    await this.file.close();
  }
}
