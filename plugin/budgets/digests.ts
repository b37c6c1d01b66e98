// The digests waiting for their window's end (<stateDir>/digests.jsonl): for each window that refused
// requests with overflow "digest", the first 50 of their texts (clipped) and how many more there
// were. At the window's end one system event lists them in the main session (digest-text.ts) and the
// record is removed; a record whose window ended while the gateway was down is told at start.
import type { FileSyncPolicy, Logger } from '../host.ts';
import { StateFile } from '../util/state-file.ts';

/** At most this many texts are listed; the rest are counted. */
export const DIGEST_LISTED = 50;
/** Each listed text is clipped to this many characters. */
export const DIGEST_TEXT_CHARS = 200;

export interface DigestItem {
  /** The hook the request came to (listed with each text in the digest of all hooks). */
  hook: string;
  text: string;
}

export interface Digest {
  /** The budget's key (budget.ts) and the name its event uses. */
  budget: string;
  name: string;
  /** The window that refused them: ms since the epoch. */
  windowStart: number;
  windowEnd: number;
  /** `5 runs`, as the budget read when the first was digested. */
  limit: string;
  perSeconds: number;
  /** Whose main session is told: the first digested run's agent. */
  agentId: string;
  listed: DigestItem[];
  /** Digested past the listed ones. */
  more: number;
  /** The coalesced batches (their run ids) whose texts it holds. */
  batches?: string[];
}

function isDigest(value: unknown): value is Digest {
  const v = value as Partial<Digest> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.budget === 'string' &&
    typeof v.name === 'string' &&
    typeof v.windowStart === 'number' &&
    typeof v.windowEnd === 'number' &&
    typeof v.limit === 'string' &&
    typeof v.perSeconds === 'number' &&
    typeof v.agentId === 'string' &&
    Array.isArray(v.listed) &&
    typeof v.more === 'number'
  );
}

/** The text clipped to DIGEST_TEXT_CHARS characters (an ellipsis marks a cut), never mid-pair. */
export function clipDigestText(text: string): string {
  const t = text.trim();
  if (t.length <= DIGEST_TEXT_CHARS) return t;
  let cut = DIGEST_TEXT_CHARS - 1;
  const c = t.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut--;
  return `${t.slice(0, cut)}…`;
}

export class Digests {
  readonly #file: StateFile<Digest>;

  private constructor(file: StateFile<Digest>) {
    this.#file = file;
  }

  static async open(path: string | undefined, logger: Logger, sync?: FileSyncPolicy): Promise<Digests> {
    return new Digests(await StateFile.open(path, isDigest, logger, { sync }));
  }

  /** Digested requests waiting, in all. */
  get waiting(): number {
    let n = 0;
    for (const d of this.#file.records.values()) n += d.listed.length + d.more;
    return n;
  }

  /** Adds a request's (or a batch's) texts to its window's digest; resolves once that is on disk. */
  add(
    id: string,
    fresh: Omit<Digest, 'listed' | 'more' | 'batches'>,
    items: readonly DigestItem[],
    batch?: string,
  ): Promise<void> {
    const kept = this.#file.get(id);
    const digest: Digest = kept ? { ...kept, listed: [...kept.listed] } : { ...fresh, listed: [], more: 0 };
    if (batch !== undefined) digest.batches = [...(kept?.batches ?? []), batch];
    for (const item of items) {
      if (digest.listed.length < DIGEST_LISTED)
        digest.listed.push({ hook: item.hook, text: clipDigestText(item.text) });
      else digest.more++;
    }
    // Once per write, not per request: a flood past a budget changes one digest many times a write.
    return this.#file.putSoon(id, digest);
  }

  /** The coalesced batches whose texts wait in a digest. */
  batches(): Set<string> {
    const out = new Set<string>();
    for (const d of this.#file.records.values()) for (const b of d.batches ?? []) out.add(b);
    return out;
  }

  get(id: string): Digest | undefined {
    return this.#file.get(id);
  }

  /** Every digest waiting, with its id. */
  entries(): [string, Digest][] {
    return [...this.#file.records.entries()];
  }

  remove(id: string): Promise<void> {
    return this.#file.remove(id);
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}
