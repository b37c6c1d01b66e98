// When a failed run or delivery is tried again (hooks.retry): exponential backoff with jitter,
// capped, and never sooner than the downstream asked (a 429's Retry-After).

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
 * together; an announced wait longer than that is taken as it is.
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
  return announcedMs !== undefined && Number.isFinite(announcedMs) && announcedMs > jittered
    ? Math.ceil(announcedMs)
    : jittered;
}
