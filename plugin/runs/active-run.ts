// One run under way: its deadline, its abort signal made on demand, and the first of its ends.
import type { TurnResult } from '../host.ts';

/**
 * A run's way to end early: its deadline or a shutdown aborts the signal the host was given and
 * settles `ended` at once, whether or not the host honours the signal; otherwise `ended` settles
 * with the host's answer. A timer and a resolver rather than a listener on the signal, and the
 * signal made only when the host asks for it: for a fast model, an AbortSignal and its listener
 * (or a Promise.race) cost more than the rest of the run's bookkeeping.
 */
export class ActiveRun {
  /** The first of the host's answer and a stop. */
  readonly ended: Promise<TurnResult>;
  /** Settles `ended`; later calls do nothing, as for any promise. */
  end!: (result: TurnResult) => void;
  private readonly timer: NodeJS.Timeout;
  private controller?: AbortController;
  private reason?: string;

  constructor(timeoutMs: number) {
    this.ended = new Promise((resolve) => (this.end = resolve));
    this.timer = setTimeout(
      () => this.stop({ status: 'timeout', error: `no reply within ${timeoutMs / 1000} s` }, 'timeout'),
      timeoutMs,
    );
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason !== undefined) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  stop(result: TurnResult, reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    this.controller?.abort(reason);
    this.end(result);
  }

  settle(): void {
    clearTimeout(this.timer);
  }
}
