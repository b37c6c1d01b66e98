// Durable delivery outbox of the standalone gateway: every delivery is one line of <stateDir>/data/outbox.jsonl
// (a segmented log, jsonl-log.ts). Memory holds only the "last" route of each agent; the admin API
// reads the deliveries a page at a time from the file. Every segment starts with a "routes" line, the
// last routes as they were when it began, so a start reads only the newest segments to rebuild them.
// A delivery to a channel that sends is written `pending` before its first attempt; each change of
// state is a later `status` line carrying the whole state (the log stays append-only), and a page
// shows each delivery's latest state. (What a start must take up again is kept by the deliveries
// themselves, in their own state file: the outbox is the record people read.)

import type { Logger } from '../../../host.ts';
import { JsonlLog, LogResources, type Position } from './log/jsonl-log.ts';
import { LoadOnce } from './load-once.ts';
import { BadCursorError, PAGE_MAX_BYTES } from './session-store.ts';
import { DEFAULT_STORAGE_LIMITS } from './storage-limits.ts';

/** recorded: a channel without credentials (nothing is sent); the rest: a channel that sends. */
export type DeliveryStatus = 'recorded' | 'pending' | 'retrying' | 'sent' | 'failed';

/** One failed try of a delivery. */
export interface DeliveryAttempt {
  at: string;
  error: string;
}

export interface OutboxEntry {
  /** Absent on entries written before deliveries had states. */
  id?: string;
  channel: string;
  to?: string;
  text: string;
  runId: string;
  agentId: string;
  at: string;
  status?: DeliveryStatus;
  /** The platform's ids of the parts sent. */
  messageIds?: string[];
  /** Why it failed, in the platform's words (secrets removed). */
  error?: string;
  /** The failed tries so far. */
  attempts?: DeliveryAttempt[];
  /** When a retrying delivery is tried again. */
  nextAttemptAt?: string;
  /** Parts of a split reply already sent: the next try starts after them. */
  partsSent?: number;
  /** A fallback's entry: the delivery it replaces, which failed for good. */
  fallbackOf?: string;
}

/** A delivery's state: the whole of it, so the latest line alone tells it. */
export interface DeliveryState {
  status: 'pending' | 'retrying' | 'sent' | 'failed';
  messageIds?: string[];
  error?: string;
  attempts?: DeliveryAttempt[];
  nextAttemptAt?: string;
  partsSent?: number;
}

/** A change of a delivery's state, appended after its entry. */
export interface StatusLine extends DeliveryState {
  kind: 'status';
  id: string;
  at: string;
}

/** A delivery still to be sent or tried again, with its latest state. */
export type UnsettledDelivery = OutboxEntry & { id: string; status: 'pending' | 'retrying' };

interface Route {
  channel: string;
  to?: string;
}

/** The first line of every segment. */
interface RoutesLine {
  kind: 'routes';
  routes: Record<string, Route>;
}

type OutboxLine = OutboxEntry | RoutesLine | StatusLine;

export interface OutboxLimits {
  resources?: LogResources;
  segmentBytes?: number;
  retainBytes?: number;
}

export interface OutboxPage {
  deliveries: OutboxEntry[];
  before?: string;
}

function isOutboxEntry(value: unknown): value is OutboxEntry {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.channel === 'string' &&
    (v.to === undefined || typeof v.to === 'string') &&
    typeof v.text === 'string' &&
    typeof v.runId === 'string' &&
    typeof v.agentId === 'string' &&
    typeof v.at === 'string' &&
    (v.id === undefined || typeof v.id === 'string')
  );
}

function isStatusLine(value: unknown): value is StatusLine {
  const v = value as Partial<StatusLine> | null;
  return typeof v === 'object' && v !== null && v.kind === 'status' && typeof v.id === 'string';
}

const isUnsettledStatus = (status: unknown): status is UnsettledDelivery['status'] =>
  status === 'pending' || status === 'retrying';

export function isUnsettledDelivery(value: unknown): value is UnsettledDelivery {
  return isOutboxEntry(value) && typeof value.id === 'string' && isUnsettledStatus(value.status);
}

/** An entry as the admin API shows it: its latest state, `recorded` for entries from before states. */
function withStatus(entry: OutboxEntry, line: StatusLine | undefined): OutboxEntry {
  if (!line) return entry.status ? entry : { ...entry, status: 'recorded' };
  const { kind: _kind, id: _id, at: _at, ...state } = line;
  return { ...stateless(entry), ...state };
}

/** The entry without the state fields a status line replaces whole. */
function stateless(entry: OutboxEntry): OutboxEntry {
  const { status: _s, messageIds: _m, error: _e, attempts: _a, nextAttemptAt: _n, partsSent: _p, ...rest } = entry;
  return rest;
}

function isRoutesLine(value: unknown): value is RoutesLine {
  const v = value as Partial<RoutesLine> | null;
  return (
    typeof v === 'object' && v !== null && v.kind === 'routes' && typeof v.routes === 'object' && v.routes !== null
  );
}

/** The runs whose deliveries a run's page looks up (the newest; as many as the run registry keeps). */
const RUNS_WITH_DELIVERIES_MAX = 10_000;

function routeOf(r: { channel?: unknown; to?: unknown }): Route | undefined {
  if (typeof r.channel !== 'string') return undefined;
  return typeof r.to === 'string' ? { channel: r.channel, to: r.to } : { channel: r.channel };
}

export class Outbox {
  readonly #log: JsonlLog<OutboxLine>;
  readonly #logger: Logger;
  readonly #file: string;
  readonly #last = new Map<string, Route>();
  readonly #opening = new LoadOnce(() => this.#load());
  /** Deliveries of this process pending or retrying, in their latest state. */
  readonly #open = new Map<string, UnsettledDelivery>();
  /** Deliveries whose final status line is being written. */
  readonly #settling = new Map<string, StatusLine>();
  /** The newest runs with a delivery here (written, or read in the tail at start), oldest first. */
  readonly #runsWithDeliveries = new Set<string>();
  #entries = 0;

  constructor(file: string, logger: Logger, limits: OutboxLimits = {}) {
    this.#file = file;
    this.#logger = logger;
    this.#log = new JsonlLog<OutboxLine>(file, logger, {
      resources: limits.resources,
      segmentBytes: limits.segmentBytes ?? DEFAULT_STORAGE_LIMITS.segmentBytes,
      retainBytes: limits.retainBytes ?? DEFAULT_STORAGE_LIMITS.outboxRetainBytes,
      segmentHeader: () => ({ kind: 'routes', routes: Object.fromEntries(this.#last) }),
    });
  }

  open(): Promise<void> {
    return this.#opening.run();
  }

  /** Deliveries written by this process (hookgate_outbox_size). */
  get appended(): number {
    return this.#entries;
  }

  /** Deliveries of this process waiting for their outcome: pending or retrying. */
  get pending(): number {
    return this.#open.size;
  }

  append(e: Omit<OutboxEntry, 'at'>): Promise<void> {
    const entry: OutboxEntry = {
      ...(e.id !== undefined ? { id: e.id } : {}),
      channel: e.channel,
      ...(e.to !== undefined ? { to: e.to } : {}),
      text: e.text,
      runId: e.runId,
      agentId: e.agentId,
      at: new Date().toISOString(),
      status: e.status ?? 'recorded',
      ...(e.fallbackOf !== undefined ? { fallbackOf: e.fallbackOf } : {}),
    };
    if (!isOutboxEntry(entry)) return Promise.reject(new TypeError('invalid outbox entry'));
    this.#entries++;
    // Once open, memory is updated synchronously in call order; before that, after loading.
    if (this.#opening.done) return this.#appendNow(entry);
    return this.open().then(() => this.#appendNow(entry));
  }

  /** Appends a delivery's new state; a page shows it at once, the log once written. */
  settle(id: string, state: DeliveryState): Promise<void> {
    const line: StatusLine = { kind: 'status', id, ...state, at: new Date().toISOString() };
    const open = this.#open.get(id);
    if (isUnsettledStatus(state.status)) {
      if (open) this.#open.set(id, { ...(stateless(open) as UnsettledDelivery), ...state, status: state.status });
      return this.#log.append(line);
    }
    this.#open.delete(id);
    this.#settling.set(id, line);
    return this.#log.append(line).finally(() => {
      if (this.#settling.get(id) === line) this.#settling.delete(id);
    });
  }

  /** Every delivery still held, oldest first, in its latest state. All in memory: for tests and tools. */
  async list(): Promise<OutboxEntry[]> {
    await this.open();
    const lines = await this.#log.readAll();
    const latest = new Map<string, StatusLine>();
    for (const l of lines) if (isStatusLine(l)) latest.set(l.id, l);
    return lines.filter(isOutboxEntry).map((e) => withStatus(e, e.id === undefined ? undefined : latest.get(e.id)));
  }

  /**
   * The newest `limit` deliveries before the cursor (or the end), oldest first, with the cursor of
   * the page before when older ones exist. Throws BadCursorError for a cursor not of the outbox.
   */
  async page(limit: number, cursor?: string): Promise<OutboxPage> {
    await this.open();
    let before: Position | undefined;
    if (cursor !== undefined) {
      const at = await this.#log.position(cursor);
      if (at === undefined) throw new BadCursorError('the cursor is malformed or does not belong to the outbox');
      if (at === 'gone') return { deliveries: [] };
      before = at;
    }
    const page = await this.#log.page(isOutboxEntry, limit, before, PAGE_MAX_BYTES);
    const deliveries = await this.#latest(page.records);
    return page.before ? { deliveries, before: this.#log.cursor(page.before) } : { deliveries };
  }

  /**
   * A run's latest reply and the fallbacks that replaced it (each names the one it replaces), oldest
   * first, in their latest state; none for a run this outbox does not know of lately (the newest
   * runs with deliveries: those written since the start and those in the tail read at start). Reads
   * the outbox backwards, parsing only the lines that name the run, and stops at the reply that
   * started the chain (a fallback is always written after the delivery it replaces).
   */
  async deliveriesOf(runId: string): Promise<OutboxEntry[]> {
    await this.open();
    if (!this.#runsWithDeliveries.has(runId)) return [];
    const needle = Buffer.from(`"runId":${JSON.stringify(runId)}`);
    const found: OutboxEntry[] = [];
    await this.#log.scanBackward((r) => {
      if (!isOutboxEntry(r) || r.runId !== runId) return true;
      found.push(r);
      return r.fallbackOf !== undefined;
    }, needle);
    return this.#latest(found.reverse());
  }

  /**
   * The entries in their latest state. A status line follows its entry, so one backward read from the
   * end finds each outcome before it reaches the entry; it stops once every pending entry is settled.
   */
  async #latest(entries: OutboxEntry[]): Promise<OutboxEntry[]> {
    const found = new Map<string, OutboxEntry | StatusLine | undefined>();
    for (const e of entries) {
      if (e.status !== 'pending' || e.id === undefined) continue;
      found.set(e.id, this.#open.get(e.id) ?? this.#settling.get(e.id));
    }
    const open = new Set([...found].filter(([, line]) => line === undefined).map(([id]) => id));
    if (open.size > 0) {
      await this.#log.scanBackward((r) => {
        if (isStatusLine(r) && open.has(r.id)) {
          found.set(r.id, r);
          open.delete(r.id);
        } else if (isOutboxEntry(r) && r.id !== undefined) open.delete(r.id);
        return open.size > 0;
      });
    }
    return entries.map((e) => {
      const latest = e.id === undefined ? undefined : found.get(e.id);
      return latest === undefined || isStatusLine(latest) ? withStatus(e, latest) : latest;
    });
  }

  lastRoute(agentId: string): { channel: string; to?: string } | undefined {
    const route = this.#last.get(agentId);
    return route ? { ...route } : undefined;
  }

  close(): Promise<void> {
    return this.#log.close();
  }

  #appendNow(entry: OutboxEntry): Promise<void> {
    this.#remember(entry);
    if (isUnsettledDelivery(entry)) this.#open.set(entry.id, entry);
    return this.#log.append(entry);
  }

  #remember(entry: OutboxEntry): void {
    const runs = this.#runsWithDeliveries;
    runs.delete(entry.runId);
    runs.add(entry.runId);
    if (runs.size > RUNS_WITH_DELIVERIES_MAX) runs.delete(runs.values().next().value!);
    this.#last.set(
      entry.agentId,
      entry.to === undefined ? { channel: entry.channel } : { channel: entry.channel, to: entry.to },
    );
  }

  async #load(): Promise<void> {
    // A log written before segments had no routes line: read it all (once; the next segment has one).
    const head = await this.#log.newestHead();
    const window = isRoutesLine(head) ? undefined : Infinity;
    let skipped = 0;
    await this.#log.scanTail((records) => {
      for (const r of records) {
        if (isOutboxEntry(r)) this.#remember(r);
        else if (isStatusLine(r)) continue;
        else if (isRoutesLine(r)) {
          for (const [agentId, route] of Object.entries(r.routes)) {
            const checked = typeof route === 'object' && route !== null ? routeOf(route) : undefined;
            if (checked) this.#last.set(agentId, checked);
          }
        } else skipped++;
      }
    }, window);
    if (skipped > 0) {
      this.#logger.warn(`outbox: skipped ${skipped} malformed entries in ${this.#file}`, {
        file: this.#file,
        skipped,
      });
    }
  }
}
