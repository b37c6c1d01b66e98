// One configured channel: its platform sender behind a pacer. A delivery is split at the platform's
// limit and its parts are sent in order, each when the pacer gives it a turn. A 429 is waited out
// for the time it announced and the same part sent again; any other failure ends the delivery with
// the platform's words and what was sent before it (so a later retry can start at the first part
// not sent).

import { Pacer, PacerClosedError } from './pacer.ts';
import { splitMessage } from './split.ts';
import type { CheckResult, PlatformSender, SendOutcome } from './types.ts';

/** A 429 announcing a longer wait ends the delivery (retryable): the pacer still holds the wait. */
const INLINE_WAIT_MAX_MS = 60_000;
/** 429s waited out for one part before the delivery gives up (retryable). */
const WAITS_PER_PART = 3;

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
}

export class Channel {
  readonly #sender: PlatformSender;
  readonly #pacer: Pacer;

  constructor(
    readonly name: string,
    sender: PlatformSender,
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
      const outcome = await this.#sendPart(recipient, parts[i]!, signal);
      if (outcome.kind !== 'sent') return failed(outcome, i);
      messageIds.push(...outcome.messageIds);
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

  async #sendPart(to: string, text: string, signal: AbortSignal): Promise<SendOutcome> {
    for (let waits = 0; ; waits++) {
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
      if (outcome.kind !== 'retryable' || outcome.waitMs === undefined) {
        release();
        return outcome;
      }
      release({ ms: outcome.waitMs, scope: outcome.scope ?? 'channel' });
      if (outcome.waitMs > INLINE_WAIT_MAX_MS || waits + 1 >= WAITS_PER_PART) return outcome;
      // The pacer holds this recipient (or the channel) until the wait is over: the next turn comes after it.
    }
  }
}
