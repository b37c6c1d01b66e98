// One configured channel: its platform sender behind a pacer. A delivery is split at the platform's
// limit and its parts are sent in order, each when the pacer gives it a turn. A failure ends the
// attempt with the platform's words and what was sent before it, so the next attempt (the retry
// schedule's business) starts at the first part not sent. A 429's announced wait holds the pacer
// (the recipient or the whole channel, as the platform said), so no send goes out before it ends;
// the caller caps it (maxWaitMs), so a platform announcing days cannot freeze the channel for them.

import { Pacer, PacerClosedError } from './pacer.ts';
import { splitMessage } from './split.ts';
import type { CheckResult, PlatformSender, SendOutcome } from './types.ts';

export type DeliveryResult =
  | { status: 'sent'; messageIds: string[]; parts: number }
  | {
      status: 'failed';
      /** True when trying again later may succeed (429, 5xx, no answer); false for a refusal. */
      retryable: boolean;
      description: string;
      /** Ids of the parts sent before the failure. */
      messageIds: string[];
      parts: number;
      /** Parts sent before the failure: a retry starts at this one. */
      sentParts: number;
      /** The wait the platform announced, if any. */
      waitMs?: number;
    };

export interface DeliverOptions {
  signal?: AbortSignal;
  /** Skip the parts a previous attempt sent. */
  fromPart?: number;
  /** Told after each part sent but the last: how many are sent by now, and their ids. */
  onPart?: (partsSent: number, messageIds: readonly string[]) => void;
  /** The longest an announced wait holds the pacer and is reported (hooks.retry.maxDelaySeconds). */
  maxWaitMs?: number;
}

export class Channel {
  readonly #sender: PlatformSender;
  readonly #pacer: Pacer;

  constructor(
    readonly name: string,
    sender: PlatformSender,
    /** Changes when the channel's config block (or a secret it reads) does: a reload keeps an unchanged channel. */
    readonly fingerprint = '',
  ) {
    this.#sender = sender;
    this.#pacer = new Pacer(sender.pacing);
  }

  get defaultTo(): string | undefined {
    return this.#sender.defaultTo;
  }

  /** Parts waiting for their turn. */
  get waiting(): number {
    return this.#pacer.waiting;
  }

  /** The recipient a delivery goes to, or why it has none. */
  recipient(to: string | undefined): string | { problem: string } {
    const chosen = to ?? this.#sender.defaultTo;
    if (chosen !== undefined) return chosen;
    if (!this.#sender.needsRecipient) return '';
    return { problem: `no recipient: the delivery names none and channels.${this.name}.defaultTo is not set` };
  }

  parts(text: string): string[] {
    return splitMessage(text, this.#sender.limit);
  }

  async deliver(to: string | undefined, text: string, opts: DeliverOptions = {}): Promise<DeliveryResult> {
    const parts = this.parts(text);
    const messageIds: string[] = [];
    const recipient = this.recipient(to);
    const failed = (outcome: Exclude<SendOutcome, { kind: 'sent' }>, sentParts: number): DeliveryResult => ({
      status: 'failed',
      retryable: outcome.kind === 'retryable',
      description: outcome.description,
      messageIds,
      parts: parts.length,
      sentParts,
      ...(outcome.kind === 'retryable' && outcome.waitMs !== undefined ? { waitMs: outcome.waitMs } : {}),
    });
    if (typeof recipient !== 'string') return failed({ kind: 'permanent', description: recipient.problem }, 0);
    const signal = opts.signal ?? new AbortController().signal;
    for (let i = opts.fromPart ?? 0; i < parts.length; i++) {
      const outcome = await this.#sendPart(recipient, parts[i]!, signal, opts.maxWaitMs);
      if (outcome.kind !== 'sent') return failed(outcome, i);
      messageIds.push(...outcome.messageIds);
      if (i + 1 < parts.length) opts.onPart?.(i + 1, messageIds);
    }
    return { status: 'sent', messageIds, parts: parts.length };
  }

  check(signal: AbortSignal = new AbortController().signal): Promise<CheckResult> {
    return this.#sender.check(signal);
  }

  /** Refuses what waits for a turn; what is being sent finishes. */
  close(): void {
    this.#pacer.close();
  }

  async #sendPart(to: string, text: string, signal: AbortSignal, maxWaitMs = Infinity): Promise<SendOutcome> {
    let release;
    try {
      release = await this.#pacer.turn(to);
    } catch (err) {
      if (err instanceof PacerClosedError) return { kind: 'retryable', description: err.message };
      throw err;
    }
    let outcome: SendOutcome;
    try {
      outcome = await this.#sender.send(to, text, signal);
    } catch (err) {
      release();
      throw err;
    }
    if (outcome.kind === 'retryable' && outcome.waitMs !== undefined) {
      const waitMs = Math.min(outcome.waitMs, maxWaitMs);
      release({ ms: waitMs, scope: outcome.scope ?? 'channel' });
      return { ...outcome, waitMs };
    }
    release();
    return outcome;
  }
}
