// The waits a gateway lets requests hold (hooks.maxWaitingRequests): a waitForCompletion request
// keeps its connection, a file descriptor, for as long as its runs take. Past the limit of all
// clients together or of one client address, a request does not wait: it is answered as if it had
// not asked to (its runs go on), never refused, so waiting senders cannot starve everyone else.

/** hooks.maxWaitingRequests as the config has it. */
export interface WaitLimits {
  /** Waits of all clients together. */
  total: number;
  /** Waits of one client address (the key the lockout counts under). */
  perClient: number;
}

export class WaitSlots {
  #total = 0;
  readonly #byClient = new Map<string, number>();

  /** Waits under way. */
  get taken(): number {
    return this.#total;
  }

  /**
   * A slot for one wait of `client`, or undefined when either limit is reached; the slot's release
   * (safe to call more than once) frees it once the request was answered.
   */
  take(client: string, limits: Readonly<WaitLimits>): (() => void) | undefined {
    const mine = this.#byClient.get(client) ?? 0;
    if (this.#total >= limits.total || mine >= limits.perClient) return undefined;
    this.#total++;
    this.#byClient.set(client, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#total--;
      const left = this.#byClient.get(client)! - 1;
      if (left === 0) this.#byClient.delete(client);
      else this.#byClient.set(client, left);
    };
  }
}
