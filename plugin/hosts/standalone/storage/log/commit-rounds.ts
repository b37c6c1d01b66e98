// When the JSONL logs write their waiting lines: all together, in rounds, once the event loop has
// taken in the requests that are arriving.
//
// The lines appended while a round waits go out in one write per log, and every log writes in the
// same round. A round waits turn by turn while the loop keeps taking in new lines (under load, the
// next requests are already being read, and their lines join the round at no cost), and runs on the
// first turn that brings none, or once it has waited ROUND_MAX_WAIT_MS. A lone sender's line waits
// one turn; a flood's rounds grow. A timer's gap instead left the loop idle while a few senders
// waited for their writes (docs/performance.md).
//
// The rounds belong to an instance (one per gateway's storage), so two gateways in one process keep
// their own rhythm.

/** The longest a round waits for more lines while the loop keeps taking them in. */
export const ROUND_MAX_WAIT_MS = 1;

export class CommitRounds {
  #waiting: (() => void)[] = [];
  #scheduled = false;
  /** Lines queued so far, and their count when the round last looked. */
  #lines = 0;
  #linesSeen = 0;
  #askedAt = 0;

  constructor(private readonly maxWaitMs = ROUND_MAX_WAIT_MS) {}

  /** Counts a line that the next round will write (the logs call it for every append). */
  lineQueued(): void {
    this.#lines++;
  }

  /** Runs `write` in the next round: once a turn of the event loop brings no new line. */
  inNextRound(write: () => void): void {
    this.#waiting.push(write);
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#askedAt = performance.now();
    this.#linesSeen = this.#lines;
    // setImmediate rather than a microtask: lines appended from promise continuations of the same
    // turn still join the round.
    setImmediate(this.#check);
  }

  readonly #check = (): void => {
    if (this.#lines !== this.#linesSeen && performance.now() - this.#askedAt < this.maxWaitMs) {
      this.#linesSeen = this.#lines;
      setImmediate(this.#check);
      return;
    }
    this.#scheduled = false;
    const writes = this.#waiting;
    this.#waiting = [];
    for (const write of writes) write();
  };
}
