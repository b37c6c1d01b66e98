// Whether the queue's Redis answers, for the log and /metrics: one warning when an outage starts and
// one line when Redis is back, however many connections the queue holds or requests fail meanwhile.
import type { Logger } from '../host.ts';

export class QueueHealth {
  #state: 'starting' | 'up' | 'down' = 'starting';

  constructor(
    /** Where Redis is, without the URL's credentials: the only thing logged of it. */
    private readonly endpoint: string,
    private readonly logger: Logger,
    private readonly onState: (up: boolean) => void,
  ) {}

  get up(): boolean {
    return this.#state === 'up';
  }

  down(): void {
    if (this.#state === 'down') return;
    this.#state = 'down';
    this.onState(false);
    this.logger.warn('the queue on Redis is unavailable; doors answer 503 queue_unavailable until it is back', {
      redis: this.endpoint,
    });
  }

  ready(): void {
    if (this.#state === 'up') return;
    if (this.#state === 'down') this.logger.info('the queue on Redis is back', { redis: this.endpoint });
    this.#state = 'up';
    this.onState(true);
  }
}
