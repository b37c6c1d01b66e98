// Durable delivery outbox of the standalone gateway: every delivery is one line of <stateDir>/data/outbox.jsonl,
// also kept in memory for the admin API and for the "last" route of each agent.

import type { Logger } from '../../host-kit.ts';
import { JsonlLog } from './jsonl-log.ts';
import { LoadOnce } from '../../util/load-once.ts';

export interface OutboxEntry {
  channel: string;
  to?: string;
  text: string;
  runId: string;
  agentId: string;
  at: string;
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

export class Outbox {
  readonly #log: JsonlLog<OutboxEntry>;
  readonly #logger: Logger;
  readonly #file: string;
  #entries: OutboxEntry[] = [];
  readonly #last = new Map<string, { channel: string; to?: string }>();
  readonly #opening = new LoadOnce(() => this.#load());

  constructor(file: string, logger: Logger) {
    this.#file = file;
    this.#logger = logger;
    this.#log = new JsonlLog<OutboxEntry>(file, logger);
  }

  open(): Promise<void> {
    return this.#opening.run();
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

  list(): OutboxEntry[] {
    return this.#entries.map((e) => ({ ...e }));
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
    this.#entries.push(entry);
    this.#last.set(entry.agentId, entry.to === undefined ? { channel: entry.channel } : { channel: entry.channel, to: entry.to });
  }

  async #load(): Promise<void> {
    const records = await this.#log.readAll();
    let skipped = 0;
    for (const r of records) {
      if (isOutboxEntry(r)) this.#remember(r);
      else skipped++;
    }
    if (skipped > 0) {
      this.#logger.warn(`outbox: skipped ${skipped} malformed entries in ${this.#file}`, {
        file: this.#file,
        skipped,
      });
    }
  }
}
