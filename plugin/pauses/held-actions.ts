// The actions of paused hooks, held in arrival order until their hook resumes (<stateDir>/held.jsonl).
// A held action is the resolved one (after templates and transforms), never the request's payload;
// with an idempotency key it keeps the key's answer, so a duplicate gets the held answer even after a
// restart. Memory: the records stay in memory as the state file keeps them, at most hooks.maxHeld
// of them, each as large as its mapping's maxActionBytes allows.
import type { IdempotencyRecord, Logger } from '../host.ts';
import type { Action } from '../action.ts';
import { StateFile } from '../util/state-file.ts';

export interface HeldAction {
  /** Arrival order across every hook of this instance. */
  seq: number;
  hook: string;
  requestId: string;
  /** ms since the epoch. */
  at: number;
  action: Action;
  idempotency?: IdempotencyRecord;
}

function isHeldAction(value: unknown): value is HeldAction {
  const v = value as Partial<HeldAction> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.seq === 'number' &&
    typeof v.hook === 'string' &&
    typeof v.requestId === 'string' &&
    typeof v.at === 'number' &&
    typeof v.action === 'object' &&
    v.action !== null &&
    Array.isArray(v.action.wakes) &&
    Array.isArray(v.action.runs)
  );
}

export class HeldActions {
  readonly #file: StateFile<HeldAction>;
  /** Each hook's held ids, oldest first. */
  readonly #queues = new Map<string, string[]>();
  #seq = 0;

  private constructor(file: StateFile<HeldAction>) {
    this.#file = file;
    const byArrival = [...file.records.entries()].sort(([, a], [, b]) => a.seq - b.seq);
    for (const [id, held] of byArrival) this.#queue(held.hook).push(id);
    this.#seq = byArrival.at(-1)?.[1].seq ?? 0;
  }

  static async open(path: string | undefined, logger: Logger): Promise<HeldActions> {
    return new HeldActions(await StateFile.open(path, isHeldAction, logger));
  }

  /** Held in all. */
  get size(): number {
    return this.#file.size;
  }

  /** Held for this hook. */
  countFor(hook: string): number {
    return this.#queues.get(hook)?.length ?? 0;
  }

  /** The hooks that hold something. */
  hooks(): string[] {
    return [...this.#queues.keys()].filter((hook) => this.countFor(hook) > 0);
  }

  /** Keys of held requests, oldest first (for the dedupe memory at start). */
  keys(): IdempotencyRecord[] {
    const out: IdempotencyRecord[] = [];
    for (const held of this.#file.records.values()) if (held.idempotency) out.push(held.idempotency);
    return out.sort((a, b) => a.at - b.at);
  }

  /** Holds the action; resolves once it is on disk. Its place in the order is taken at once. */
  hold(hook: string, requestId: string, action: Action, idempotency?: IdempotencyRecord): Promise<void> {
    const held: HeldAction = { seq: ++this.#seq, hook, requestId, at: Date.now(), action };
    if (idempotency) held.idempotency = idempotency;
    const id = `${held.seq}-${requestId}`;
    this.#queue(hook).push(id);
    return this.#file.put(id, held).catch((err: unknown) => {
      this.#drop(hook, id);
      void this.#file.remove(id).catch(() => {});
      throw err;
    });
  }

  /** The oldest held actions of the hook, at most `max`, still held until released. */
  oldest(hook: string, max: number): { id: string; held: HeldAction }[] {
    const ids = this.#queues.get(hook) ?? [];
    const out: { id: string; held: HeldAction }[] = [];
    for (const id of ids) {
      if (out.length >= max) break;
      const held = this.#file.get(id);
      if (held) out.push({ id, held });
    }
    return out;
  }

  /** Done with these (carried out, or refused at resume); resolves once that is on disk. */
  release(hook: string, ids: readonly string[]): Promise<void> {
    const queue = this.#queues.get(hook);
    if (queue) {
      const gone = new Set(ids);
      // Released ids are always the oldest: one cut at the front.
      let n = 0;
      while (n < queue.length && gone.has(queue[n]!)) n++;
      if (n === ids.length) queue.splice(0, n);
      else for (const id of ids) this.#drop(hook, id);
      if (queue.length === 0) this.#queues.delete(hook);
    }
    return Promise.all(ids.map((id) => this.#file.remove(id))).then(() => {});
  }

  close(): Promise<void> {
    return this.#file.close();
  }

  #queue(hook: string): string[] {
    let queue = this.#queues.get(hook);
    if (!queue) this.#queues.set(hook, (queue = []));
    return queue;
  }

  #drop(hook: string, id: string): void {
    const queue = this.#queues.get(hook);
    const at = queue?.indexOf(id) ?? -1;
    if (at >= 0) queue!.splice(at, 1);
    if (queue?.length === 0) this.#queues.delete(hook);
  }
}
