// When the JSONL logs write their waiting lines: all together, in rounds, on the turn of the event
// loop after the one that queued them.
//
// The lines appended in one turn (the requests read in one poll of the event loop) go out in one
// write per log, and every log writes in the same round. A round runs on the next turn, never on a
// timer: a gap between rounds made them larger, but left the loop idle while senders waited for
// their writes (docs/performance.md). Under load the rounds still grow: a log writes one batch at a
// time, and what gathers meanwhile waits for the next round.
//
// The rounds belong to an instance (one per gateway's storage), so two gateways in one process keep
// their own rhythm.

export class CommitRounds {
  #waiting: (() => void)[] = [];
  #scheduled = false;

  /** Runs `write` in the next round, one turn of the event loop away. */
  inNextRound(write: () => void): void {
    this.#waiting.push(write);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate rather than a microtask: lines appended from promise continuations of the same
    // turn still join the round.
    setImmediate(this.#run);
  }

  readonly #run = (): void => {
    this.#scheduled = false;
    const writes = this.#waiting;
    this.#waiting = [];
    for (const write of writes) write();
  };
}
