// When the JSONL logs write their waiting lines: all together, in rounds, and under load at most one
// round per ROUND_GAP_MS.
//
// Every file write goes through libuv's thread pool: a wake-up of a pool thread and another of the
// event loop when it is done. On a small VM those hand-offs cost more CPU than the writes, and a log
// that wrote again as soon as its last write finished made a write every turn or two under a flood
// of wakes. Writing every log's lines in the same round, and leaving a gap between rounds, turns them
// into fewer and larger writes.
//
// The gap is for load only: after a round that carried at most LONE_ROUND_LINES lines (a lone
// sender's request, or a quiet spell), the next round runs at once, on the next turn of the event
// loop, so a request that arrives alone waits for nothing but its own write. Under load the rounds
// carry more lines and keep their gap.
//
// The rounds belong to an instance (one per gateway's storage), so two gateways in one process keep
// their own rhythm.

/** The least time between the starts of two rounds under load; a request waits at most this long for its write to start. */
export const ROUND_GAP_MS = 1;
/** A round with no more lines than this was not under load. */
export const LONE_ROUND_LINES = 2;

export class CommitRounds {
  #waiting: (() => void)[] = [];
  #scheduled = false;
  #lastRound = -Infinity;
  /** Lines queued since the last round started, and how many the last round carried. */
  #lines = 0;
  #lastRoundLines = 0;

  /** Counts a line that the next round will write (the logs call it for every append). */
  lineQueued(): void {
    this.#lines++;
  }

  /** Runs `write` in the next round: one turn of the event loop away, or the rest of the gap. */
  inNextRound(write: () => void): void {
    this.#waiting.push(write);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate rather than a microtask: lines appended from promise continuations of the same
    // turn still join the round.
    const wait = this.#lastRoundLines <= LONE_ROUND_LINES ? 0 : this.#lastRound + ROUND_GAP_MS - performance.now();
    if (wait <= 0) setImmediate(this.#run);
    else setTimeout(this.#run, wait);
  }

  readonly #run = (): void => {
    this.#scheduled = false;
    this.#lastRound = performance.now();
    this.#lastRoundLines = this.#lines;
    this.#lines = 0;
    const writes = this.#waiting;
    this.#waiting = [];
    for (const write of writes) write();
  };
}
