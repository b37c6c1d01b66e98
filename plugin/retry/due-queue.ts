// Things due at a time (retries, resumptions): a binary heap ordered by due time and one timer for
// the earliest, so ten thousand waiting items cost one timer and nothing while idle. Removal is
// lazy: a removed or replaced item stays in the heap until it reaches the top and is skipped there.

import { timerDelay } from '../util/time-bounds.ts';

interface Slot<T> {
  id: string;
  at: number;
  /** Items due at the same time fall due in the order they were added. */
  seq: number;
  item: T;
}

function before(a: Slot<unknown>, b: Slot<unknown>): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

export class DueQueue<T> {
  readonly #heap: Slot<T>[] = [];
  /** The live slot of each id; a heap slot not in here is stale. */
  readonly #live = new Map<string, Slot<T>>();
  readonly #onDue: (item: T, id: string) => void;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  #closed = false;
  #seq = 0;

  constructor(onDue: (item: T, id: string) => void, now: () => number = Date.now) {
    this.#onDue = onDue;
    this.#now = now;
  }

  get size(): number {
    return this.#live.size;
  }

  has(id: string): boolean {
    return this.#live.has(id);
  }

  /** When the item is due (ms since the epoch), or undefined. */
  dueAt(id: string): number | undefined {
    return this.#live.get(id)?.at;
  }

  /** Schedules the item; an id already waiting is moved to the new time. */
  add(id: string, atMs: number, item: T): void {
    if (this.#closed) return;
    const slot = { id, at: atMs, seq: this.#seq++, item };
    this.#live.set(id, slot);
    this.#push(slot);
    // Old slots of removed ids pile up only if items are replaced far more often than they fall due.
    if (this.#heap.length > 2 * this.#live.size + 1024) this.#rebuild();
    this.#arm();
  }

  /** True when the id was waiting. */
  remove(id: string): boolean {
    return this.#live.delete(id);
  }

  /** Stops the timer; nothing falls due after this. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    this.#dropStale();
    const top = this.#heap[0];
    if (!top || this.#closed) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAt = Infinity;
      return;
    }
    if (this.#timer && this.#timerAt <= top.at) return;
    clearTimeout(this.#timer);
    this.#timerAt = top.at;
    // A later item is looked at again when the longest timer fires.
    this.#timer = setTimeout(() => this.#fire(), timerDelay(top.at - this.#now()));
    // Waiting items never keep the process alive on their own.
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#now();
    const due: Slot<T>[] = [];
    for (;;) {
      this.#dropStale();
      const top = this.#heap[0];
      if (!top || top.at > now) break;
      this.#pop();
      this.#live.delete(top.id);
      due.push(top);
    }
    this.#arm();
    for (const slot of due) this.#onDue(slot.item, slot.id);
  }

  #dropStale(): void {
    while (this.#heap.length && this.#live.get(this.#heap[0]!.id) !== this.#heap[0]) this.#pop();
  }

  #rebuild(): void {
    this.#heap.length = 0;
    for (const slot of this.#live.values()) this.#push(slot);
  }

  #push(slot: Slot<T>): void {
    const heap = this.#heap;
    heap.push(slot);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(slot, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = slot;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}
