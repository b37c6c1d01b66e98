// Durable delivery outbox of the standalone gateway: every delivery is one line of <stateDir>/data/outbox.jsonl
// (a segmented log, jsonl-log.ts). Memory holds only the "last" route of each agent; the admin API
// reads the deliveries a page at a time from the file. Every segment starts with a "routes" line, the
// last routes as they were when it began, so a start reads only the newest segments to rebuild them.

import type { Logger } from '../../host-kit.ts';
import { JsonlLog, LogResources, type Position } from './jsonl-log.ts';
import { LoadOnce } from './load-once.ts';
import { BadCursorError, PAGE_MAX_BYTES } from './session-store.ts';
import { DEFAULT_STORAGE_LIMITS } from './storage-limits.ts';

export interface OutboxEntry {
  channel: string;
  to?: string;
  text: string;
  runId: string;
  agentId: string;
  at: string;
}

interface Route {
  channel: string;
  to?: string;
}

/** The first line of every segment. */
interface RoutesLine {
  kind: 'routes';
  routes: Record<string, Route>;
}

type OutboxLine = OutboxEntry | RoutesLine;

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
    typeof v.at === 'string'
  );
}

function isRoutesLine(value: unknown): value is RoutesLine {
  const v = value as Partial<RoutesLine> | null;
  return (
    typeof v === 'object' && v !== null && v.kind === 'routes' && typeof v.routes === 'object' && v.routes !== null
  );
}

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
    return this.#log.appendCount;
  }

  append(e: Omit<OutboxEntry, 'at'>): Promise<void> {
    const entry: OutboxEntry = {
      channel: e.channel,
      ...(e.to !== undefined ? { to: e.to } : {}),
      text: e.text,
      runId: e.runId,
      agentId: e.agentId,
      at: new Date().toISOString(),
    };
    if (!isOutboxEntry(entry)) return Promise.reject(new TypeError('invalid outbox entry'));
    // Once open, memory is updated synchronously in call order; before that, after loading.
    if (this.#opening.done) return this.#appendNow(entry);
    return this.open().then(() => this.#appendNow(entry));
  }

  /** Every delivery still held, oldest first. All in memory: for tests and tools. */
  async list(): Promise<OutboxEntry[]> {
    await this.open();
    return (await this.#log.readAll()).filter(isOutboxEntry);
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
    return page.before
      ? { deliveries: page.records, before: this.#log.cursor(page.before) }
      : { deliveries: page.records };
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
    return this.#log.append(entry);
  }

  #remember(entry: OutboxEntry): void {
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
