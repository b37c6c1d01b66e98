// Marks of the core's own hand-overs that must happen once: a budget window's digest (one system
// event) and a coalesced batch (one run). Each goes to the host as an idempotency record of a scope
// no request can use, in the same durable write as the host's acceptance of that event or run
// (host.ts, IdempotencyRecord), so a start after a crash between the hand-over and the removal of
// its own record (digests.jsonl, batches.jsonl) knows it was handed over, and drops it.
import type { IdempotencyRecord } from '../host.ts';

/** A digest's mark: its key is the digest's id (budget key and window start). */
export const DIGEST_SCOPE = 'hookgate:digest';
/** A coalesced batch's mark: its key is the batch's run id. */
export const BATCH_SCOPE = 'hookgate:batch';

/** What an earlier process handed over, by the ids of its digests and batches. */
export interface OnceMarks {
  digests: ReadonlySet<string>;
  batches: ReadonlySet<string>;
}

export function onceMark(scope: typeof DIGEST_SCOPE | typeof BATCH_SCOPE, key: string): IdempotencyRecord {
  return { scope, key, at: Date.now(), status: 202 };
}

/** The marks among restored records, and the requests' own keys (for the dedupe store). */
export function splitOnceMarks(records: Iterable<IdempotencyRecord>): {
  marks: OnceMarks;
  keys: IdempotencyRecord[];
} {
  const digests = new Set<string>();
  const batches = new Set<string>();
  const keys: IdempotencyRecord[] = [];
  for (const r of records) {
    if (r.scope === DIGEST_SCOPE) digests.add(r.key);
    else if (r.scope === BATCH_SCOPE) batches.add(r.key);
    else keys.push(r);
  }
  return { marks: { digests, batches }, keys };
}
