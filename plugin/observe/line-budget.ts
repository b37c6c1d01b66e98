// A budget of log lines a second, for lines anyone can cause as fast as they can send: within it a
// line is written; past it the caller counts the occurrence, and its report (one summary line) is
// called once the second is over.

export class LineBudget {
  #second = 0;
  #used = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly perSecond: number,
    private readonly report: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** True: write the line. False: count it; the report is due within a second. */
  take(): boolean {
    const second = Math.floor(this.now() / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#used = 0;
    }
    if (this.#used < this.perSecond) {
      this.#used++;
      return true;
    }
    if (!this.#timer) {
      this.#timer = setTimeout(() => this.report(), 1000);
      this.#timer.unref();
    }
    return false;
  }

  /** The report was made (or is being made now): nothing is due until the budget runs out again. */
  reported(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
