// When a failed run or delivery is tried again (hooks.retry): exponential backoff with jitter,
// capped, and never sooner than the downstream asked (a 429's Retry-After) up to the same cap.

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  initialDelaySeconds: number;
  maxDelaySeconds: number;
}

/** Whether a thing tried `triesSoFar` times may be tried once more. */
export function mayRetry(policy: Readonly<RetryPolicy>, triesSoFar: number): boolean {
  return triesSoFar < policy.attempts;
}

/**
 * The wait before the next try, after `triesSoFar` tries (1 after the first): initial × 2^(tries-1),
 * at most the cap, then drawn from its upper half so senders failed together do not come back
 * together; an announced wait longer than that is taken, up to the cap (maxDelaySeconds): a peer
 * announcing days, or a time past the dates a clock shows, waits the cap.
 */
export function retryDelayMs(
  policy: Readonly<RetryPolicy>,
  triesSoFar: number,
  announcedMs?: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(triesSoFar - 1, 0), 40);
  const capped = Math.min(policy.initialDelaySeconds * 2 ** exponent, policy.maxDelaySeconds) * 1000;
  const jittered = Math.round(capped / 2 + random() * (capped / 2));
  return announcedMs !== undefined && announcedMs > jittered ? cappedWaitMs(policy, announcedMs) : jittered;
}

/** An announced wait (Infinity included) held to maxDelaySeconds; NaN and negatives are no wait. */
export function cappedWaitMs(policy: Readonly<RetryPolicy>, announcedMs: number): number {
  return announcedMs > 0 ? Math.ceil(Math.min(announcedMs, policy.maxDelaySeconds * 1000)) : 0;
}
