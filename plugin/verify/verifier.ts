// How a signed sender proves a request is its own: what every scheme's verifier offers the lifecycle.
import type { IncomingHttpHeaders } from 'node:http';

export const SCHEMES = [
  'github',
  'stripe',
  'slack',
  'standard-webhooks',
  'shopify',
  'linear',
  'gitlab',
  'bearer',
  'basic',
  'hmac',
] as const;
export type Scheme = (typeof SCHEMES)[number];

/** What a verifier is shown: the headers and the body exactly as received. */
export interface SignedRequest {
  headers: IncomingHttpHeaders;
  body: Buffer;
  nowMs: number;
}

export type VerifyOutcome =
  | { ok: true }
  /**
   * expired: the proof is authentic but its timestamp is outside the window. presented: for schemes
   * whose sender presents the secret itself (bearer, basic, gitlab), what it presented, so the limiter
   * can forgive it when a rotation makes it valid; a signature is never a credential of its own.
   */
  | { ok: false; expired: boolean; presented?: string };

export interface Verifier {
  readonly scheme: Scheme;
  /** Request headers that carry the proof: never shown to templates, transforms or logs. */
  readonly proofHeaders: readonly string[];
  /** Checks the proof over the raw bytes, in constant time against every configured secret. */
  verify(request: SignedRequest): VerifyOutcome;
  /** For senders that sign a timestamp inside the payload: false when it is outside the window. */
  fresh?(payload: Record<string, unknown>, nowMs: number): boolean;
  /** For schemes whose sender presents the secret itself: what passes (bearer, gitlab: the secret; basic: user:secret). */
  accepted?(): readonly string[];
  /** The sender's id for this delivery (retries carry the same), when the scheme has one. */
  deliveryId(headers: IncomingHttpHeaders, payload: Record<string, unknown>): string | undefined;
  /**
   * The same id, for schemes that send it in a header (or have none): set, it lets a duplicate be
   * answered before its body is parsed. Absent when the id is in the payload (Stripe, Slack).
   */
  readonly headerDeliveryId?: (headers: IncomingHttpHeaders) => string | undefined;
}
