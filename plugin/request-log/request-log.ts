// The hook requests this gateway answered, for `GET /api/requests`, the console and `hookgate
// requests`: kept on disk under <stateDir>/requests/ (segments.ts), bounded by hooks.requestLog
// (entries and days, whichever is smaller), read back after start while the gateway already answers
// (100,000 entries take seconds): requests answered meanwhile are kept aside and join the log, after
// the old entries, once it is read; pages and lookups wait for the read. Memory holds an index of
// small records (time, hook, status, code, client, flags, where the line is): filters and `before`
// paging walk the index, and only the page's entries are read from disk. Adding is a push and a
// queued write: nothing on the answer's path waits for the disk. Without a state dir it lives in memory.
import type { Logger } from '../host.ts';
import { entryOf, type LoggedRequest, type Outcome, type RequestEntry } from './entry.ts';
import { entryLine, RequestLogFiles, type Segment, type Stored } from './segments.ts';
import { errorMessage } from '../util/errors.ts';

export interface RequestLogBounds {
  maxEntries: number;
  retainMs: number;
}

/** Without a state dir, at most this many entries are kept (whole, in memory). */
export const MEMORY_ONLY_ENTRIES = 10_000;
const DUPLICATE = 1;
const HELD = 2;
const IGNORED = 4;
/** Client addresses kept as one shared string each, up to this many (most requests come from few senders). */
const SHARED_CLIENTS = 4096;

/** What the index keeps of an entry: enough to filter and to find its line. */
interface Indexed extends Stored {
  readonly atMs: number;
  readonly requestId: string;
  readonly hook: string;
  readonly status: number;
  readonly code: string | undefined;
  readonly client: string;
  readonly flags: number;
}

export interface RequestFilter {
  hook?: string;
  outcome?: Outcome;
  code?: string;
  client?: string;
  sinceMs?: number;
  untilMs?: number;
}

/**
 * A new entry as the live tail gets it: as recorded (to filter without reformatting it), and its
 * JSON as the admin API shows it, made only when a tail sends it (a flood's tail sends a few a
 * second), from the text its disk line is made of.
 */
export class LiveEntry {
  #raw: string | undefined;
  #json: string | undefined;
  constructor(readonly logged: LoggedRequest) {}

  /** `JSON.stringify` of the entry as recorded, made once. */
  get raw(): string {
    return (this.#raw ??= JSON.stringify(this.logged));
  }

  get json(): string {
    return (this.#json ??= liveJson(this.logged, this.raw));
  }
}

export interface RequestPage {
  /** The newest matching entries older than the cursor, oldest first. */
  requests: RequestEntry[];
  /** The cursor for older ones, when there are. */
  before?: string;
}

export interface RequestCounts {
  requests: number;
  accepted: number;
  refused: number;
  duplicates: number;
}

/** One outcome class per request: duplicate, held and ignored before the status class. */
function outcomeOf(status: number, flags: number): Outcome {
  if (flags & DUPLICATE) return 'duplicate';
  if (flags & HELD) return 'held';
  if (flags & IGNORED) return 'ignored';
  return status >= 500 ? '5xx' : status >= 400 ? '4xx' : '2xx';
}

export function outcomeOfEntry(entry: Pick<RequestEntry, 'status' | 'duplicate' | 'held' | 'ignored'>): Outcome {
  return outcomeOf(entry.status, flagsOf(entry));
}

function flagsOf(entry: Pick<RequestEntry, 'duplicate' | 'held' | 'ignored'>): number {
  return (entry.duplicate ? DUPLICATE : 0) | (entry.held ? HELD : 0) | (entry.ignored ? IGNORED : 0);
}

/** Whether an indexed record (or a fresh entry) passes the filter. */
function matches(
  r: { atMs: number; hook: string; status: number; code?: string | undefined; client: string; flags: number },
  f: RequestFilter,
): boolean {
  return (
    (f.hook === undefined || r.hook === f.hook) &&
    (f.code === undefined || r.code === f.code) &&
    (f.client === undefined || r.client === f.client) &&
    (f.sinceMs === undefined || r.atMs >= f.sinceMs) &&
    (f.untilMs === undefined || r.atMs < f.untilMs) &&
    (f.outcome === undefined || outcomeOf(r.status, r.flags) === f.outcome)
  );
}

/** Whether a new entry (as the live tail hands it over) passes the filter; no filter passes all. */
export function liveMatches(logged: LoggedRequest, f: RequestFilter): boolean {
  if (
    f.hook === undefined &&
    f.outcome === undefined &&
    f.code === undefined &&
    f.client === undefined &&
    f.sinceMs === undefined &&
    f.untilMs === undefined
  )
    return true;
  const { atMs, hook, status, code, client } = logged;
  return matches({ atMs, hook, status, code, client, flags: flagsOf(logged) }, f);
}

/**
 * What an entry serialized as recorded starts with when its time is its first field (as recorded).
 */
const AT_MS_FIELD = '{"atMs":';

/**
 * The JSON the API shows for an entry, from `raw` (`JSON.stringify` of the entry as recorded): with
 * its time as ISO in place of `atMs`, field for field what `JSON.stringify(entryOf(logged))` makes,
 * without copying the entry into a new object first (when the time is its first field).
 */
export function liveJson(logged: LoggedRequest, raw: string): string {
  const comma = raw.startsWith(AT_MS_FIELD) ? raw.indexOf(',', AT_MS_FIELD.length) : -1;
  if (comma < 0) return JSON.stringify(entryOf(logged));
  return `{"at":"${new Date(logged.atMs).toISOString()}"${raw.slice(comma)}`;
}

export class RequestLog {
  #files: RequestLogFiles | undefined;
  readonly #bounds: () => RequestLogBounds;
  /** Oldest first; `#start` is where the live part begins (the rest is compacted now and then). */
  #index: Indexed[] = [];
  #start = 0;
  #nextSeq = 1;
  /** Hook names and codes come from a small set: one string each, shared by every record. */
  readonly #names = new Map<string, string>();
  /**
   * Client addresses, likewise: each entry read back from disk (or parsed from a header) brings its own
   * copy of the text, some 30 bytes of the index's ~220 an entry (docs/performance.md).
   */
  readonly #clients = new Map<string, string>();
  readonly #listeners = new Set<(entry: LiveEntry) => void>();
  /** While the files are read back: settles once they are (never rejects). */
  #loading: Promise<void> | undefined;
  /** Requests answered while the files were read back, in order: added once they are. */
  #early: LoggedRequest[] = [];

  private constructor(files: RequestLogFiles | undefined, bounds: () => RequestLogBounds) {
    this.#files = files;
    this.#bounds = bounds;
  }

  /**
   * `dir` undefined: memory only, at most MEMORY_ONLY_ENTRIES. Resolves once the folder is listed (a
   * folder that cannot be used fails the start); its entries are read after, see `loaded`.
   */
  static async open(dir: string | undefined, logger: Logger, bounds: () => RequestLogBounds): Promise<RequestLog> {
    if (dir === undefined) return new RequestLog(undefined, () => memoryOnly(bounds()));
    // Segments of about an eighth of the log: dropping the oldest frees disk in steps of that.
    const segmentEntries = Math.min(10_000, Math.max(64, Math.ceil(bounds().maxEntries / 8)));
    const log = new RequestLog(undefined, bounds);
    const files = await RequestLogFiles.open(dir, logger, segmentEntries);
    log.#loading = log.#load(files, logger);
    return log;
  }

  /** Reads the entries on disk into the index, then adds the requests answered meanwhile. */
  async #load(files: RequestLogFiles, logger: Logger): Promise<void> {
    const loaded: Indexed[] = [];
    try {
      await files.load((logged, seq, segment, at, bytes) => {
        loaded.push(this.#indexed(logged, seq, segment, at, bytes));
      });
    } catch (err) {
      // What was read is kept; the log goes on with it (a later page simply lacks the rest).
      logger.error('request log not read back whole', { reason: errorMessage(err) });
    }
    // The segments were read in order of their first entry: the index is in order of seq.
    loaded.sort((a, b) => a.seq - b.seq);
    this.#index = loaded;
    this.#nextSeq = (loaded.at(-1)?.seq ?? 0) + 1;
    for (const r of loaded) r.segment!.live++;
    this.#files = files;
    this.#loading = undefined;
    const early = this.#early;
    this.#early = [];
    for (const logged of early) this.#keep(logged);
    this.#trim(Date.now());
    files.sweep();
  }

  /** Settles once the entries on disk are read back (at once without a state dir). */
  loaded(): Promise<void> {
    return this.#loading ?? Promise.resolve();
  }

  /** True while the entries on disk are read back: pages wait, requests are kept aside. */
  get loading(): boolean {
    return this.#loading !== undefined;
  }

  #indexed(logged: LoggedRequest, seq: number, segment: Segment | undefined, at: number, bytes: number): Indexed {
    return {
      seq,
      atMs: logged.atMs,
      requestId: logged.requestId,
      hook: this.#name(logged.hook),
      status: logged.status,
      code: logged.code === undefined ? undefined : this.#name(logged.code),
      client: this.#client(logged.client),
      flags: flagsOf(logged),
      entry: segment ? undefined : logged,
      segment,
      at,
      bytes,
      dropped: false,
    };
  }

  #name(text: string): string {
    const known = this.#names.get(text);
    if (known !== undefined) return known;
    // Names no mapping owns are logged as one prefix, so the set stays small; bounded all the same.
    if (this.#names.size < 10_000) this.#names.set(text, text);
    return text;
  }

  #client(text: string): string {
    const known = this.#clients.get(text);
    if (known !== undefined) return known;
    if (this.#clients.size < SHARED_CLIENTS) this.#clients.set(text, text);
    return text;
  }

  get size(): number {
    return this.#index.length - this.#start;
  }

  /** Records a request once it is answered; written later, in a batch. */
  add(logged: LoggedRequest): void {
    // With a tail open the entry is serialized once, for the tail and for its disk line.
    const live = this.#listeners.size ? new LiveEntry(logged) : undefined;
    // Numbered after the entries on disk, so kept aside until they are read (bounded by the log's own).
    if (this.#loading) {
      if (this.#early.length < this.#bounds().maxEntries) this.#early.push(logged);
    } else this.#keep(logged, live);
    if (live === undefined) return;
    for (const listener of this.#listeners) listener(live);
  }

  /** `live`: the entry as the tail has it, whose serialization its disk line reuses. */
  #keep(logged: LoggedRequest, live?: LiveEntry): void {
    const record = this.#indexed(logged, this.#nextSeq++, undefined, 0, 0);
    if (live !== undefined && this.#files) record.line = entryLine(record.seq, live.raw);
    this.#index.push(record);
    this.#files?.write(record);
    this.#trim(logged.atMs);
  }

  /** Drops the oldest entries beyond the bounds (count, then age). */
  #trim(now: number): void {
    const { maxEntries, retainMs } = this.#bounds();
    const oldest = now - retainMs;
    let dropped = false;
    while (this.size > 0) {
      const first = this.#index[this.#start]!;
      if (this.size <= maxEntries && first.atMs >= oldest) break;
      first.dropped = true;
      first.entry = undefined;
      if (first.segment) first.segment.live--;
      this.#start++;
      dropped = true;
    }
    if (!dropped) return;
    // Dropped entries are let go once they are an eighth of the index, not half: each holds its id.
    if (this.#start > 1024 && this.#start * 8 > this.#index.length) {
      this.#index = this.#index.slice(this.#start);
      this.#start = 0;
    }
    this.#files?.sweep();
  }

  /** The index position of the first record at or after `seq`. */
  #positionOf(seq: number): number {
    let lo = this.#start;
    let hi = this.#index.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#index[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * The newest `limit` entries matching the filter, older than the cursor `before` (a seq), oldest
   * first; `before` in the answer when older matching ones remain. Reads only those entries.
   */
  async page(filter: RequestFilter, limit: number, before?: number): Promise<RequestPage> {
    await this.#loading;
    this.#trim(Date.now());
    const found: Indexed[] = [];
    let i = (before === undefined ? this.#index.length : this.#positionOf(before)) - 1;
    for (; i >= this.#start && found.length < limit; i--) {
      const r = this.#index[i]!;
      if (matches(r, filter)) found.push(r);
    }
    let older = false;
    for (; i >= this.#start; i--) {
      if (matches(this.#index[i]!, filter)) {
        older = true;
        break;
      }
    }
    found.reverse();
    const requests = await this.#entries(found);
    return older && found.length ? { requests, before: String(found[0]!.seq) } : { requests };
  }

  /** One entry by its request id, newest first. */
  async find(requestId: string): Promise<RequestEntry | undefined> {
    await this.#loading;
    for (let i = this.#index.length - 1; i >= this.#start; i--) {
      const r = this.#index[i]!;
      if (r.requestId === requestId) return (await this.#entries([r]))[0];
    }
    return undefined;
  }

  async #entries(records: Indexed[]): Promise<RequestEntry[]> {
    const read = this.#files ? await this.#files.read(records) : records.map((r) => r.entry);
    return read.filter((e): e is LoggedRequest => e !== undefined).map(entryOf);
  }

  /** Counts over the whole log, from the index alone. */
  counts(): RequestCounts {
    let accepted = 0;
    let duplicates = 0;
    for (let i = this.#start; i < this.#index.length; i++) {
      const r = this.#index[i]!;
      if (r.status < 300) accepted++;
      if (r.flags & DUPLICATE) duplicates++;
    }
    return { requests: this.size, accepted, refused: this.size - accepted, duplicates };
  }

  /** Each hook's requests since `sinceMs` by outcome, and its last request's time, from the index. */
  recentByHook(sinceMs: number): Map<string, { outcomes: Record<Outcome, number>; lastAtMs: number }> {
    const out = new Map<string, { outcomes: Record<Outcome, number>; lastAtMs: number }>();
    for (let i = this.#index.length - 1; i >= this.#start; i--) {
      const r = this.#index[i]!;
      let hook = out.get(r.hook);
      if (!hook) {
        hook = {
          outcomes: { '2xx': 0, '4xx': 0, '5xx': 0, duplicate: 0, held: 0, ignored: 0 },
          lastAtMs: r.atMs,
        };
        out.set(r.hook, hook);
      }
      if (r.atMs >= sinceMs) hook.outcomes[outcomeOf(r.status, r.flags)]++;
    }
    return out;
  }

  /** Calls `listener` with each entry added from now on, until the returned function is called. */
  subscribe(listener: (entry: LiveEntry) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get subscribers(): number {
    return this.#listeners.size;
  }

  /** Writes what is queued and closes the file. */
  async close(): Promise<void> {
    this.#listeners.clear();
    // The requests kept aside during the read are written with the rest.
    await this.#loading;
    await this.#files?.close();
  }
}

function memoryOnly(bounds: RequestLogBounds): RequestLogBounds {
  return { maxEntries: Math.min(bounds.maxEntries, MEMORY_ONLY_ENTRIES), retainMs: bounds.retainMs };
}
