// A warning that a sender can provoke at will (a flood of fresh keys, retries of one unreadable
// key) is logged at most once a minute per subject; the line says how often it happened since the
// previous one.
import type { LogFields, Logger } from '../host.ts';

const INTERVAL_MS = 60_000;

export class LimitedWarning {
  /** Per subject: when its last line went out, and how often it happened since. */
  readonly #last = new Map<string, { at: number; count: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly message: string,
    private readonly now: () => number = Date.now,
  ) {}

  note(subject: string, fields: LogFields): void {
    const now = this.now();
    const last = this.#last.get(subject);
    if (last && now - last.at < INTERVAL_MS) {
      last.count++;
      return;
    }
    this.logger.warn(this.message, { ...fields, count: (last?.count ?? 0) + 1 });
    this.#last.set(subject, { at: now, count: 0 });
  }
}
