// The shapes every channel sender shares. One send attempt is one HTTP request for one part of a
// message, and its outcome is a value, never a throw: the caller decides what a retryable failure
// means (today: wait out an announced 429, else fail; later: the retry schedule of "After the 200").

/** What one attempt came to. `description` is the platform's own words, secrets removed. */
export type SendOutcome =
  | { kind: 'sent'; messageIds: string[] }
  /**
   * Worth trying again: a 429, a 5xx, or no answer. `waitMs` is the wait the platform announced
   * (a 429's retry_after or Retry-After); `scope` says whether it holds one recipient or the channel.
   */
  | { kind: 'retryable'; description: string; status?: number; waitMs?: number; scope?: 'recipient' | 'channel' }
  /** Refused for good (bad credential, unknown chat, invalid request): trying again cannot help. */
  | { kind: 'permanent'; description: string; status?: number };

/** At most `count` sends in any `perMs` window. */
export interface Rate {
  count: number;
  perMs: number;
}

/** The pace a platform publishes: per recipient, and for everything the credential sends. */
export interface Pacing {
  recipient(to: string): readonly Rate[];
  all: readonly Rate[];
}

/** How a platform counts a message's size: code points, or (Teams) the bytes of the card. */
export interface SizeLimit {
  max: number;
  /** Weight of one code point; default 1 (lengths in characters). */
  weight?: (codePoint: number) => number;
}

/** `channels check`: ok with what the platform said of the credential, or why not. */
export interface CheckResult {
  ok: boolean;
  /** One line: who the credential is (bot name, team, number), or the platform's refusal. */
  detail: string;
  /** True when nothing could be verified without posting (a webhook URL that only accepts posts). */
  unverifiable?: boolean;
}

/** A platform's sender for one configured channel: knows its credential, never shows it. */
export interface PlatformSender {
  readonly limit: SizeLimit;
  readonly pacing: Pacing;
  /** The recipient when the delivery names none (channels.<name>.defaultTo, or the webhook itself). */
  readonly defaultTo?: string;
  /** Whether this sender needs a recipient (a webhook posts where it was made for). */
  readonly needsRecipient: boolean;
  send(to: string, text: string, signal: AbortSignal): Promise<SendOutcome>;
  check(signal: AbortSignal): Promise<CheckResult>;
}
