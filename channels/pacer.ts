// Pacing below a platform's published limits: a send waits for its turn instead of being refused.
// Each recipient sends one part at a time (so parts arrive in order), and a send counts against a
// window from the moment its answer came back, which is never before the platform received it: the
// platform sees at most `count` arrivals in any `perMs`. Sends in flight count too, so the limit for
// the whole credential holds while several recipients send at once. One timer serves the whole
// pacer (never one per queued send): it fires when the earliest waiting send may go, or after the
// longest delay a timer holds, whichever is first.

import type { Pacing, Rate } from './types.ts';
import { timerDelay } from '../plugin/util/time-bounds.ts';

export class PacerClosedError extends Error {
  constructor() {
    super('the channel is closing');
  }
}

/** The sends of one scope (a recipient, or the whole credential) against its rates. */
class Window {
  /** When each recent send's answer came back, oldest first. */
  readonly done: number[] = [];
  inFlight = 0;
  /** Nothing may start before this (an announced 429 wait). */
  holdUntil = 0;

  constructor(readonly rates: readonly Rate[]) {}

  /** When the next send may start, or Infinity while sends in flight fill a rate; `now` when it may. */
  readyAt(now: number): number {
    let at = Math.max(now, this.holdUntil);
    for (const { count, perMs } of this.rates) {
      if (this.inFlight >= count) return Infinity;
      // Of the last `count - inFlight` finished sends, the oldest must have left the window.
      const i = this.done.length - (count - this.inFlight);
      if (i >= 0) at = Math.max(at, this.done[i]! + perMs);
    }
    return at;
  }

  finish(now: number): void {
    this.inFlight--;
    this.done.push(now);
    const keep = Math.max(0, ...this.rates.map((r) => r.count));
    if (this.done.length > keep) this.done.splice(0, this.done.length - keep);
  }

  get idle(): boolean {
    const horizon = Math.max(0, ...this.rates.map((r) => r.perMs));
    const last = this.done[this.done.length - 1] ?? -Infinity;
    return this.inFlight === 0 && last + horizon <= Date.now() && this.holdUntil <= Date.now();
  }
}

interface Waiter {
  go: (release: Release) => void;
  fail: (err: Error) => void;
}

/** Ends a send: records it, and may hold the recipient or everything for an announced wait. */
export type Release = (hold?: { ms: number; scope: 'recipient' | 'channel' }) => void;

interface Recipient {
  window: Window;
  busy: boolean;
  queue: Waiter[];
}

export class Pacer {
  readonly #pacing: Pacing;
  readonly #all: Window;
  readonly #recipients = new Map<string, Recipient>();
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  #waiting = 0;
  #closed = false;

  constructor(pacing: Pacing) {
    this.#pacing = pacing;
    this.#all = new Window(pacing.all);
  }

  /** Sends waiting for their turn. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Resolves when a send to `to` may start; call the release once its answer is in. */
  turn(to: string): Promise<Release> {
    if (this.#closed) return Promise.reject(new PacerClosedError());
    let r = this.#recipients.get(to);
    if (!r) {
      r = { window: new Window(this.#pacing.recipient(to)), busy: false, queue: [] };
      this.#recipients.set(to, r);
    }
    const recipient = r;
    return new Promise<Release>((go, fail) => {
      recipient.queue.push({ go, fail });
      this.#waiting++;
      this.#pump();
    });
  }

  /** Refuses every waiting send; sends in flight finish. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const r of this.#recipients.values()) {
      for (const w of r.queue.splice(0)) w.fail(new PacerClosedError());
    }
    this.#waiting = 0;
  }

  #pump(): void {
    if (this.#closed) return;
    const now = Date.now();
    let next = Infinity;
    for (const [to, r] of this.#recipients) {
      if (r.busy) continue;
      if (r.queue.length === 0) {
        if (r.window.idle) this.#recipients.delete(to);
        continue;
      }
      const at = Math.max(r.window.readyAt(now), this.#all.readyAt(now));
      if (at > now) {
        next = Math.min(next, at);
        continue;
      }
      this.#start(to, r);
    }
    this.#arm(next);
  }

  #start(to: string, r: Recipient): void {
    const waiter = r.queue.shift()!;
    this.#waiting--;
    r.busy = true;
    r.window.inFlight++;
    this.#all.inFlight++;
    // Served last next time round: recipients take turns under the shared limit.
    this.#recipients.delete(to);
    this.#recipients.set(to, r);
    let released = false;
    waiter.go((hold) => {
      if (released) return;
      released = true;
      const end = Date.now();
      r.busy = false;
      r.window.finish(end);
      this.#all.finish(end);
      if (hold) {
        const until = end + hold.ms;
        const w = hold.scope === 'channel' ? this.#all : r.window;
        w.holdUntil = Math.max(w.holdUntil, until);
      }
      this.#pump();
    });
  }

  #arm(at: number): void {
    if (at === this.#timerAt) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    if (at === Infinity) return;
    // A hold past the longest timer is looked at again when that timer fires.
    this.#timer = setTimeout(
      () => {
        this.#timerAt = Infinity;
        this.#pump();
      },
      timerDelay(at - Date.now()),
    );
  }
}
