// The main session hears of each dead letter (a reply the queue gave up on; a failed run's own
// summary is its notice), at most once a minute per hook: the first of a quiet hook is told at
// once; later ones in that minute are held, and when the minute ends the latest is told with the
// count of the others ("… and 2 more"). One timer serves every hook (the
// due queue), and a hook's state is forgotten a minute after its last event, so hook names a sender
// chooses (an /agent body's `name`) cannot grow it.
import type { GatewayHost } from '../host.ts';
import { sanitizeMarkers } from '../safety/index.ts';
import { errorMessage } from '../util/errors.ts';
import { DueQueue } from '../retry/due-queue.ts';

/** What an event says of one failure. */
export interface FailureNotice {
  hook: string;
  agentId: string;
  runId: string;
  /** "the agent run", "the delivery to telegram" */
  what: string;
  attempts: number;
  /** Already one line, masked and sanitised (failure-reason.ts). */
  reason: string;
}

interface HookWindow {
  endsAt: number;
  /** Failures held since the last event, and the latest of them. */
  held: number;
  latest?: FailureNotice;
}

export const FAILURE_EVENT_WINDOW_MS = 60_000;

export class FailureEvents {
  readonly #windows = new Map<string, HookWindow>();
  readonly #due: DueQueue<string>;

  constructor(
    private readonly host: Pick<GatewayHost, 'sessions' | 'logger'>,
    private readonly windowMs = FAILURE_EVENT_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.#due = new DueQueue((hook) => this.#windowEnded(hook), now);
  }

  /** Tells the main session now, or holds the notice for the end of the hook's minute. */
  notify(notice: FailureNotice): void {
    const window = this.#windows.get(notice.hook);
    if (window) {
      window.held++;
      window.latest = notice;
      return;
    }
    this.#open(notice.hook);
    this.#post(notice, 0);
  }

  close(): void {
    this.#due.close();
  }

  #open(hook: string): void {
    const endsAt = this.now() + this.windowMs;
    this.#windows.set(hook, { endsAt, held: 0 });
    this.#due.add(hook, endsAt, hook);
  }

  #windowEnded(hook: string): void {
    const window = this.#windows.get(hook);
    this.#windows.delete(hook);
    if (!window?.latest) return;
    this.#open(hook);
    this.#post(window.latest, window.held - 1);
  }

  #post(notice: FailureNotice, more: number): void {
    const n = notice.attempts;
    // The hook's name may come from a request body (/agent's `name`): no forged markers either.
    const text = sanitizeMarkers(
      `Hook ${notice.hook}: ${notice.what} failed after ${n} attempt${n === 1 ? '' : 's'}: ${notice.reason}` +
        (more > 0 ? ` … and ${more} more` : ''),
    );
    const { sessions, logger } = this.host;
    void (async () => {
      try {
        const main = sessions.mainSessionKey(notice.agentId);
        await sessions.enqueueSystemEvent(main, text, { source: 'hook', hook: notice.hook, runId: notice.runId });
      } catch (err) {
        logger.error('posting a failure event failed', { runId: notice.runId, reason: errorMessage(err) });
      }
    })();
  }
}
