// The actions of paused hooks, held in arrival order until their hook resumes (<stateDir>/held.jsonl).
// A held action is the resolved one (after templates and transforms), never the request's payload;
// with an idempotency key it keeps the key's answer, so a duplicate gets the held answer even after a
// restart. Memory: the actions stay on disk; memory keeps an index (each one's order, hook, size on
// disk and idempotency answer), and a resume reads them back one at a time. The bytes held are
// counted, so hooks.maxHeldBytes can bound them.
import type { FileSyncPolicy, IdempotencyRecord, Logger } from '../host.ts';
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

/** What memory keeps of a held action. */
interface HeldEntry {
  seq: number;
  hook: string;
  /** Its line on disk. */
  bytes: number;
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

function entryOf(held: HeldAction, bytes: number): HeldEntry {
  const entry: HeldEntry = { seq: held.seq, hook: held.hook, bytes };
  if (held.idempotency) entry.idempotency = held.idempotency;
  return entry;
}

export class HeldActions {
  readonly #file: StateFile<HeldAction, HeldEntry>;
  /** Each hook's held ids, oldest first. */
  readonly #queues = new Map<string, string[]>();
  #seq = 0;
  #bytes = 0;

  private constructor(file: StateFile<HeldAction, HeldEntry>) {
    this.#file = file;
    const byArrival = [...file.records.entries()].sort(([, a], [, b]) => a.seq - b.seq);
    for (const [id, held] of byArrival) {
      this.#queue(held.hook).push(id);
      this.#bytes += held.bytes;
    }
    this.#seq = byArrival.at(-1)?.[1].seq ?? 0;
  }

  static async open(path: string | undefined, logger: Logger, sync?: FileSyncPolicy): Promise<HeldActions> {
    return new HeldActions(await StateFile.open(path, isHeldAction, logger, { summarize: entryOf, sync }));
  }

  /** Held in all. */
  get size(): number {
    return this.#file.size;
  }

  /** Bytes held in all (the held actions' lines on disk). */
  get bytes(): number {
    return this.#bytes;
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

  /**
   * Holds the action unless the bytes held would then pass `maxBytes` (false: nothing held); resolves
   * once it is on disk. Its place in the order is taken at once.
   */
  async hold(
    hook: string,
    requestId: string,
    action: Action,
    idempotency?: IdempotencyRecord,
    maxBytes = Infinity,
  ): Promise<boolean> {
    const held: HeldAction = { seq: this.#seq + 1, hook, requestId, at: Date.now(), action };
    if (idempotency) held.idempotency = idempotency;
    const id = `${held.seq}-${requestId}`;
    const encoded = this.#file.encode(id, held);
    if (this.#bytes + encoded.bytes > maxBytes) return false;
    this.#seq = held.seq;
    this.#bytes += encoded.bytes;
    this.#queue(hook).push(id);
    try {
      await this.#file.putEncoded(encoded);
    } catch (err) {
      if (this.#drop(hook, id)) this.#bytes -= encoded.bytes;
      void this.#file.remove(id).catch(() => {});
      throw err;
    }
    return true;
  }

  /** The ids of the hook's oldest held actions, at most `max`, still held until released. */
  oldest(hook: string, max: number): string[] {
    return (this.#queues.get(hook) ?? []).slice(0, max);
  }

  /** A held action, read back from disk; undefined when it is gone or its line cannot be read. */
  read(id: string): Promise<HeldAction | undefined> {
    return this.#file.read(id);
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
    for (const id of ids) this.#bytes -= this.#file.get(id)?.bytes ?? 0;
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

  /** True when the id was still queued. */
  #drop(hook: string, id: string): boolean {
    const queue = this.#queues.get(hook);
    const at = queue?.indexOf(id) ?? -1;
    if (at >= 0) queue!.splice(at, 1);
    if (queue?.length === 0) this.#queues.delete(hook);
    return at >= 0;
  }
}
