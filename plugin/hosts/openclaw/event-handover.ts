// Hands acknowledged system events to OpenClaw and notes when OpenClaw has taken them in. An event is
// journaled first (the sender's 200 waits for that), then queued in OpenClaw; when OpenClaw cannot
// take it now (it refuses system events while it prepares a plugin replacement or starts), it is
// tried again until it can. It is taken in once it has left OpenClaw's queue, which is what a turn
// does when it reads the queue; then the journal forgets it. At start, the last process's leftovers
// come back through the same door, once OpenClaw's gateway is ready for them.
import type { AckJournal, JournaledEvent } from './ack-journal.ts';
import { errorMessage } from '../../util/errors.ts';

/** The part of OpenClaw this needs: queue an event, and read a session's queue (ids and texts). */
export interface EventQueue {
  /** False when OpenClaw dropped it (equal to the event before it). Throws when it cannot take events now. */
  enqueue(sessionKey: string, text: string): boolean;
  peek(sessionKey: string): readonly { id: string; text: string }[];
}

export interface HandoverLogger {
  warn(msg: string, fields?: Record<string, string | number | undefined>): void;
}

/** How often the queues of events OpenClaw holds for us are looked at; and retries start at this. */
const TICK_MS = 500;
/** Retries of events OpenClaw refused back off up to this. */
const MAX_RETRY_MS = 5_000;

export class EventHandover {
  /** Queued in OpenClaw, not yet taken in: our id → OpenClaw's id. */
  readonly #held = new Map<string, { sessionKey: string; queuedId: string }>();
  /** Journaled, not yet accepted by OpenClaw, oldest first; `restored`: the last process's. */
  readonly #refused: (JournaledEvent & { restored?: true })[] = [];
  #timer: NodeJS.Timeout | undefined;
  #retryMs = TICK_MS;
  #nextRetry = 0;
  /** Until the gateway is ready, events are journaled and kept back. */
  #open = false;
  #lastWarning = '';

  constructor(
    private readonly journal: AckJournal,
    private readonly queue: EventQueue,
    private readonly logger: HandoverLogger,
  ) {}

  /** Journals the event (resolves once it is on disk), then hands it to OpenClaw now or later. */
  async accept(event: JournaledEvent): Promise<void> {
    await this.journal.event(event);
    this.#refused.push(event);
    if (this.#open && this.#refused.length === 1) this.#flush();
    this.#schedule();
  }

  /** The last process's events, handed over once the gateway is ready (open()). */
  restore(events: readonly JournaledEvent[]): void {
    this.#refused.unshift(...events.map((e) => ({ ...e, restored: true as const })));
    this.#schedule();
  }

  /** The gateway takes events now: hand over what waits. */
  open(): void {
    this.#open = true;
    this.#retryMs = TICK_MS;
    this.#nextRetry = 0;
    this.#flush();
    this.#schedule();
  }

  /**
   * Stops handing over and watching (the service stops). What waits is offered once more through
   * `lastChance` (OpenClaw refuses the runtime's door to a stopping plugin); anything left stays
   * journaled for the next start.
   */
  close(lastChance?: EventQueue['enqueue']): void {
    if (lastChance) this.#flush(lastChance);
    this.#open = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#held.clear();
    this.#refused.length = 0;
  }

  #schedule(): void {
    if (this.#timer || (this.#held.size === 0 && (this.#refused.length === 0 || !this.#open))) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#tick();
    }, TICK_MS);
    // Never keeps OpenClaw's process alive.
    this.#timer.unref();
  }

  #tick(): void {
    if (this.#open && this.#refused.length && Date.now() >= this.#nextRetry) this.#flush();
    this.#noteTaken();
    this.#schedule();
  }

  /** Hands over refused events in order; stops at the first OpenClaw still refuses. */
  #flush(enqueue: EventQueue['enqueue'] = (sessionKey, text) => this.queue.enqueue(sessionKey, text)): void {
    while (this.#refused.length) {
      const event = this.#refused[0]!;
      // After a plugin reload OpenClaw's queue still holds what the last service handed over.
      const kept = event.restored ? this.#unclaimed(event) : undefined;
      if (kept) {
        this.#refused.shift();
        this.#held.set(event.id, { sessionKey: event.sessionKey, queuedId: kept });
        continue;
      }
      let queued: boolean;
      try {
        queued = enqueue(event.sessionKey, event.text);
      } catch (err) {
        this.#backOff(err);
        return;
      }
      // What OpenClaw just queued is the last of its session's queue (this all runs in one turn); an
      // event it did not queue is there too when it was dropped as equal to the one before it.
      const text = event.text.trim();
      const last = this.queue.peek(event.sessionKey).at(-1);
      if (text && last?.text !== text) {
        this.#backOff(new Error('OpenClaw did not queue the event'));
        return;
      }
      this.#refused.shift();
      this.#retryMs = TICK_MS;
      if (queued && last) this.#held.set(event.id, { sessionKey: event.sessionKey, queuedId: last.id });
      // Dropped as equal to the event before it (OpenClaw has that one) or empty: nothing to hand over.
      else this.#taken(event.id);
    }
  }

  /** The id of an event in OpenClaw's queue with this text that no event of ours stands for yet. */
  #unclaimed(event: JournaledEvent): string | undefined {
    const claimed = new Set([...this.#held.values()].map((h) => h.queuedId));
    const text = event.text.trim();
    return this.queue.peek(event.sessionKey).find((e) => e.text === text && !claimed.has(e.id))?.id;
  }

  #backOff(err: unknown): void {
    const reason = errorMessage(err);
    if (reason !== this.#lastWarning) {
      this.#lastWarning = reason;
      this.logger.warn('OpenClaw does not take system events now; they are kept and tried again', {
        waiting: this.#refused.length,
        reason,
      });
    }
    this.#nextRetry = Date.now() + this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }

  /** Events no longer in their session's queue were read by a turn: OpenClaw has them. */
  #noteTaken(): void {
    if (this.#held.size === 0) return;
    const queues = new Map<string, Set<string>>();
    for (const [id, { sessionKey, queuedId }] of this.#held) {
      let ids = queues.get(sessionKey);
      if (!ids) {
        ids = new Set(this.queue.peek(sessionKey).map((e) => e.id));
        queues.set(sessionKey, ids);
      }
      if (!ids.has(queuedId)) {
        this.#held.delete(id);
        this.#taken(id);
      }
    }
  }

  #taken(id: string): void {
    this.journal.taken(id).catch((err: unknown) =>
      this.logger.warn('could not note an event OpenClaw took in; it may be handed over again at the next start', {
        reason: errorMessage(err),
      }),
    );
  }
}
