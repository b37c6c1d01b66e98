// Everything the standalone gateway keeps on disk, under <stateDir>/data: the session files, the
// outbox and the run index, with their bounds, and the run registry rebuilt from them. One instance
// per gateway owns the commit rounds, write buffers, file handles and syncs its logs share.
import path from 'node:path';
import type { IdempotencyRecord, Logger, RunRecord } from '../../../host.ts';
import { LogResources } from './log/jsonl-log.ts';
import { FileSync } from '../../../util/file-sync.ts';
import { Outbox } from './outbox.ts';
import { RunIndex } from './run-index.ts';
import { readRun, RunRegistry, type RunLine } from './run-registry.ts';
import { SessionStore } from './session-store.ts';
import type { StorageSettings } from './storage-settings.ts';
import { assertFileOrAbsent } from '../../../util/state-file-error.ts';

export { DEFAULT_STORAGE_SETTINGS, type StorageSettings } from './storage-settings.ts';

export class Storage {
  readonly store: SessionStore;
  readonly outbox: Outbox;
  readonly runs: RunRegistry;
  /** storage.fsync: shared by the logs here and the plugin's state files (the host's fileSync). */
  readonly fileSync: FileSync;
  readonly #index: RunIndex;
  /** The files a start checks: a directory in a log's place would fail every write later. */
  readonly #files: string[];
  /** Keys met while opening: a request with several runs has its key on each. */
  readonly #keys = new Map<string, IdempotencyRecord>();

  constructor(dataDir: string, limits: StorageSettings, logger: Logger) {
    // Every log follows storage.fsync: the sessions (events, run acceptances, idempotency keys), the
    // run index (a 202 waits for it) and the outbox.
    this.fileSync = new FileSync(limits.fsync, limits.fsyncIntervalMs);
    const resources = new LogResources(undefined, this.fileSync);
    this.#files = ['run-index.jsonl', 'outbox.jsonl'].map((name) => path.join(dataDir, name));
    const segmentBytes = limits.segmentBytes;
    this.#index = new RunIndex(path.join(dataDir, 'run-index.jsonl'), logger, {
      resources,
      segmentBytes,
      retainBytes: limits.runIndexRetainBytes,
    });
    this.runs = new RunRegistry(
      {
        record: (key, line) => this.#recordRunLine(key, line),
        queue: (key, line) => this.store.queueRun(key, line),
      },
      (runId) => this.#runFromDisk(runId),
    );
    this.store = new SessionStore(
      path.join(dataDir, 'sessions'),
      logger,
      (key, records) => this.#restore(key, records),
      {
        resources,
        segmentBytes,
        retainBytes: limits.sessionRetainBytes,
      },
    );
    this.outbox = new Outbox(path.join(dataDir, 'outbox.jsonl'), logger, {
      resources,
      segmentBytes,
      retainBytes: limits.outboxRetainBytes,
    });
  }

  /** The idempotency keys found in the lines read on open, oldest first (handed over once). */
  takeIdempotencyRecords(): IdempotencyRecord[] {
    const records = [...this.#keys.values()].sort((a, b) => a.at - b.at);
    this.#keys.clear();
    return records;
  }

  /** Each session's newest lines on open: its runs, and the keys its events and acceptances carry. */
  #restore(sessionKey: string, records: readonly object[]): void {
    this.runs.restore(sessionKey, records);
    for (const r of records) {
      const idem = (r as { idem?: unknown }).idem;
      if (isIdempotencyRecord(idem)) this.#keys.set(`${idem.scope}\u0000${idem.key}`, idem);
    }
  }

  /**
   * Reads what a start needs; returns the runs the last process accepted but never finished. A log
   * that cannot be used (a directory in its place) throws a StateFileError naming it.
   */
  async open(): Promise<RunRecord[]> {
    await Promise.all(this.#files.map(assertFileOrAbsent));
    await Promise.all([this.store.open(), this.outbox.open()]);
    return this.runs.restored();
  }

  async close(): Promise<void> {
    await Promise.all([this.store.close(), this.outbox.close(), this.#index.close()]);
  }

  /** An accepted run is indexed in the same round as its status line; its 202 waits for both. */
  #recordRunLine(key: string, line: RunLine): Promise<void> {
    if (line.status !== 'queued') return this.store.recordRun(key, line);
    const indexed = this.#index.add(line.runId, key);
    return Promise.all([indexed, this.store.recordRun(key, line)]).then(() => undefined);
  }

  async #runFromDisk(runId: string): Promise<RunRecord | undefined> {
    const sessionKey = await this.#index.sessionOf(runId);
    if (sessionKey === undefined) return undefined;
    return readRun((key, needle, visit) => this.store.scanBackward(key, needle, visit), sessionKey, runId);
  }
}

function isIdempotencyRecord(v: unknown): v is IdempotencyRecord {
  if (v === null || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r.scope === 'string' && typeof r.key === 'string' && typeof r.at === 'number' && typeof r.status === 'number'
  );
}
