// When the JSONL logs write their waiting lines: all together, in rounds, and under load at most one
// round per ROUND_GAP_MS.
//
// Every file write goes through libuv's thread pool: a wake-up of a pool thread and another of the
// event loop when it is done. On a small VM those hand-offs cost more CPU than the writes, and a log
// that wrote again as soon as its last write finished made a write every turn or two under a flood
// of wakes. Writing every log's lines in the same round, and leaving a gap between rounds, turns them
// into fewer and larger writes. After a quiet spell the round runs at once (on the next turn of the
// event loop), so a lone request waits for nothing but its own write.
//
// The rounds belong to an instance (one per gateway's storage), so two gateways in one process keep
// their own rhythm.

/** The least time between the starts of two rounds; a request waits at most this long for its write to start. */
export const ROUND_GAP_MS = 1;

export class CommitRounds {
  #waiting: (() => void)[] = [];
  #scheduled = false;
  #lastRound = -Infinity;

  /** Runs `write` in the next round: one turn of the event loop away, or the rest of the gap. */
  inNextRound(write: () => void): void {
    this.#waiting.push(write);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate rather than a microtask: lines appended from promise continuations of the same
    // turn still join the round.
    const wait = this.#lastRound + ROUND_GAP_MS - performance.now();
    if (wait <= 0) setImmediate(this.#run);
    else setTimeout(this.#run, wait);
  }

  readonly #run = (): void => {
    this.#scheduled = false;
    this.#lastRound = performance.now();
    const writes = this.#waiting;
    this.#waiting = [];
    for (const write of writes) write();
  };
}
