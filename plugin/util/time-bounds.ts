// The bounds of Node's clock: a timer holds at most 2^31-1 ms (about 24.8 days; a longer one fires at
// once with a TimeoutOverflowWarning, so a timer re-armed on each firing spins), and a Date holds
// ±8.64e15 ms (past it, toISOString throws "Invalid time value"). Times a peer announces pass here.

/** The longest delay a timer takes. */
export const LONGEST_TIMER_MS = 2_147_483_647;
/** The latest time a Date holds, in ms since the epoch. */
const LATEST_DATE_MS = 8.64e15;

/**
 * A delay a timer can take: at least 0, at most LONGEST_TIMER_MS (NaN counts as 0). A timer for a
 * later time fires early and its owner looks again then.
 */
export function timerDelay(ms: number): number {
  return ms > 0 ? Math.min(ms, LONGEST_TIMER_MS) : 0;
}

/** The time as ISO text, or undefined when no Date holds it (NaN, or beyond ±8.64e15 ms). */
export function isoTime(ms: number): string | undefined {
  return Math.abs(ms) <= LATEST_DATE_MS ? new Date(ms).toISOString() : undefined;
}
