// Per-session history for the standalone gateway: one segmented JSONL log per session under
// <stateDir>/sessions, named by an escaped session key; read a tail on open and a page at a time after.
// The file-name rule and what a file holds are in README.md.

import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../../host.ts';
import { errnoCode } from '../../../util/errors.ts';
import { fileProblem, StateFileError, stateFileError } from '../../../util/state-file-error.ts';
import { JsonlLog, LogResources, segmentSeq, type Position } from './log/jsonl-log.ts';
import { LoadOnce } from './load-once.ts';
import { isoNow } from '../io/iso-now.ts';
import type { RunLine } from './run-registry.ts';
import { DEFAULT_STORAGE_LIMITS } from './storage-limits.ts';
import { decodeSessionFileName, sessionFileName, SUFFIX } from './session-file-name.ts';

export { decodeSessionFileName, sessionFileName } from './session-file-name.ts';

/** What a write nobody waits for returns: one settled promise, not one per line. */
const QUEUED: Promise<void> = Promise.resolve();

export interface SessionEntry {
  kind: 'system-event' | 'heartbeat' | 'prompt' | 'reply';
  text: string;
  at: string;
  [k: string]: unknown;
}

export interface SessionInfo {
  key: string;
  agentId: string;
  updatedAt: string;
}

interface SessionHeader {
  kind: 'session';
  key: string;
  agentId: string;
  createdAt: string;
}

/** An entry as given to append(), after validation. */
interface EntryInput {
  kind: SessionEntry['kind'];
  text: string;
  at?: unknown;
  [k: string]: unknown;
}

export type SessionRecord = SessionEntry | SessionHeader | RunLine;

/** Told about the records of the tail of every session read on open, in order, a chunk at a time. */
export type SessionFileVisitor = (key: string, records: readonly SessionRecord[]) => void;

export interface SessionLogLimits {
  resources?: LogResources;
  segmentBytes?: number;
  /** Bytes of history kept per session. */
  retainBytes?: number;
}

export interface HistoryPage {
  entries: SessionEntry[];
  before?: string;
}

/** A page cursor that is malformed or belongs elsewhere. */
export class BadCursorError extends Error {}

/** Bytes of lines one page holds at most: a page of large entries is shorter than its limit. */
export const PAGE_MAX_BYTES = 1024 * 1024;

interface SessionState {
  key: string;
  agentId: string;
  updatedAt: string;
  log: JsonlLog<SessionRecord>;
  pending: string[];
}

const ENTRY_KINDS: ReadonlySet<string> = new Set(['system-event', 'heartbeat', 'prompt', 'reply']);
/** Sessions read at once on open. */
const LOAD_CONCURRENCY = 32;

/** agent:<agentId>:<rest> -> agentId; anything else belongs to "main". */
export function agentIdOfKey(key: string): string {
  const m = /^agent:([^:]+):/.exec(key);
  return m?.[1] ?? 'main';
}

function isEntry(record: unknown): record is EntryInput {
  if (typeof record !== 'object' || record === null) return false;
  const r = record as { kind?: unknown; text?: unknown };
  return typeof r.kind === 'string' && ENTRY_KINDS.has(r.kind) && typeof r.text === 'string';
}

function isHeader(record: unknown): record is SessionHeader {
  if (typeof record !== 'object' || record === null) return false;
  const r = record as { kind?: unknown; key?: unknown };
  return r.kind === 'session' && typeof r.key === 'string' && r.key !== '';
}

/**
 * Pending events wait in memory for the next heartbeat, whose prompt shows only the start of each (the
 * whole text is in the file). A burst of large events must not pin their full texts until then.
 */
export const PENDING_TEXT_MAX = 4000;

function pendingText(text: string): string {
  if (text.length <= PENDING_TEXT_MAX) return text;
  // A JSON round trip makes a fresh string; a slice would keep the whole text alive.
  return JSON.parse(JSON.stringify(`${text.slice(0, PENDING_TEXT_MAX)}… (clipped)`)) as string;
}

export class SessionStore {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #sessions = new Map<string, SessionState>();
  readonly #opening = new LoadOnce(() => this.#load());
  readonly #onFileRead: SessionFileVisitor | undefined;
  readonly #limits: SessionLogLimits;
  readonly #resources: LogResources;
  /** The rotated segments of each file name, as listed on open. */
  readonly #listed = new Map<string, number[]>();

  constructor(dir: string, logger: Logger, onFileRead?: SessionFileVisitor, limits: SessionLogLimits = {}) {
    this.#dir = dir;
    this.#logger = logger;
    this.#onFileRead = onFileRead;
    this.#limits = limits;
    this.#resources = limits.resources ?? new LogResources();
  }

  open(): Promise<void> {
    return this.#opening.run();
  }

  append(key: string, entry: Omit<SessionEntry, 'at'> & { at?: string }): Promise<void> {
    return this.#add(key, entry, true);
  }

  /** Like append, for entries nobody waits for: no promise to settle (JsonlLog logs a failed write). */
  write(key: string, entry: Omit<SessionEntry, 'at'> & { at?: string }): void {
    this.#add(key, entry, false).catch(() => {});
  }

  /** Adds a run's status line to the session's file; settles once it is written. */
  recordRun(key: string, line: RunLine): Promise<void> {
    return this.#add(key, line, true);
  }

  /** Adds a run's status line nobody waits for (JsonlLog logs a failed write). */
  queueRun(key: string, line: RunLine): void {
    this.#add(key, line, false).catch(() => {});
  }

  /** Every entry of a session still held, oldest first. All in memory: for tests and tools. */
  async history(key: string): Promise<SessionEntry[]> {
    if (!this.#opening.done) await this.open();
    const session = this.#sessions.get(key);
    if (!session) return [];
    const records = await session.log.readAll();
    return records.filter((r): r is SessionEntry => isEntry(r));
  }

  /**
   * The newest `limit` entries before the cursor (or the end), oldest first, with the cursor of the
   * page before when older entries exist. Throws BadCursorError for a cursor not of this session.
   */
  async historyPage(key: string, limit: number, cursor?: string): Promise<HistoryPage> {
    if (!this.#opening.done) await this.open();
    const session = this.#sessions.get(key);
    if (!session) {
      if (cursor !== undefined) throw new BadCursorError('the cursor does not belong to this session');
      return { entries: [] };
    }
    let before: Position | undefined;
    if (cursor !== undefined) {
      const at = await session.log.position(cursor);
      if (at === undefined) throw new BadCursorError('the cursor is malformed or does not belong to this session');
      if (at === 'gone') return { entries: [] };
      before = at;
    }
    const page = await session.log.page(
      isEntry as (r: SessionRecord) => r is SessionEntry,
      limit,
      before,
      PAGE_MAX_BYTES,
    );
    return page.before ? { entries: page.records, before: session.log.cursor(page.before) } : { entries: page.records };
  }

  /**
   * Reads a session newest line first, parsing only the lines that hold `needle`, until `visit`
   * returns false.
   */
  async scanBackward(key: string, needle: Buffer, visit: (record: SessionRecord) => boolean): Promise<void> {
    if (!this.#opening.done) await this.open();
    const session = this.#sessions.get(key);
    if (session) await session.log.scanBackward((record) => visit(record), needle);
  }

  list(): SessionInfo[] {
    return [...this.#sessions.values()]
      .map((s) => ({ key: s.key, agentId: s.agentId, updatedAt: s.updatedAt }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  takePending(key: string): string[] {
    const session = this.#sessions.get(key);
    if (!session || session.pending.length === 0) return [];
    const texts = session.pending;
    session.pending = [];
    return texts;
  }

  pendingCount(key: string): number {
    return this.#sessions.get(key)?.pending.length ?? 0;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#sessions.values()].map((s) => s.log.close()));
  }

  /**
   * Deletes a session: its file and every rotated segment of it (those listed at start and those its
   * log rotated since), once the writes queued to it are out; no directory listing, which would cost
   * as much as there are sessions. A line written to the key afterwards starts a new session.
   */
  async delete(key: string): Promise<void> {
    if (!this.#opening.done) await this.open();
    const session = this.#sessions.get(key);
    const name = sessionFileName(key);
    const file = path.join(this.#dir, name);
    const files = new Set([file, ...(this.#listed.get(name) ?? []).map((seq) => `${file}.${seq}`)]);
    this.#sessions.delete(key);
    this.#listed.delete(name);
    if (session) {
      await session.log.close();
      for (const f of session.log.files()) files.add(f);
    }
    for (const f of files) await rm(f, { force: true });
  }

  /** Settles once written when asked to wait; else once queued (at once when the store is open). */
  #add(key: string, entry: (Omit<SessionEntry, 'at'> & { at?: string }) | RunLine, wait: boolean): Promise<void> {
    if (typeof key !== 'string' || key === '') {
      return Promise.reject(new TypeError('session key must be a non-empty string'));
    }
    if (entry.kind !== 'run' && !isEntry(entry)) {
      return Promise.reject(new TypeError('session entry needs a known kind and a text'));
    }
    const checked = entry as EntryInput | RunLine;
    // Once open, the in-memory state is updated synchronously, in call order.
    if (this.#opening.done) return this.#appendNow(key, checked, wait);
    return this.open().then(() => this.#appendNow(key, checked, wait));
  }

  #appendNow(key: string, entry: EntryInput | RunLine, wait: boolean): Promise<void> {
    // A status line is complete as given.
    if (entry.kind === 'run') return this.#addRecord(key, entry, wait);
    // Built field by field: rest/spread copies cost more than the rest of this method on the wake path.
    const record: SessionEntry = {
      kind: entry.kind,
      text: entry.text,
      at: typeof entry.at === 'string' && entry.at !== '' ? entry.at : isoNow(),
    };
    for (const k in entry)
      if (k !== 'kind' && k !== 'text' && k !== 'at') record[k] = (entry as Record<string, unknown>)[k];
    return this.#addRecord(key, record, wait);
  }

  /** Updates the session in memory (synchronously, in call order) and queues the record's line. */
  #addRecord(key: string, record: SessionEntry | RunLine, wait: boolean): Promise<void> {
    let session = this.#sessions.get(key);
    if (!session) {
      const agentId = agentIdOfKey(key);
      const header: SessionHeader = { kind: 'session', key, agentId, createdAt: record.at };
      const name = sessionFileName(key);
      // Segments listed on open but not loaded (an unreadable session) are still counted, never overwritten.
      const log = this.#newLog(path.join(this.#dir, name), () => header, this.#listed.get(name) ?? []);
      session = { key, agentId, updatedAt: record.at, log, pending: [] };
      this.#sessions.set(key, session);
    }
    // The time of the last history entry: status lines are not history.
    if (record.kind !== 'run') session.updatedAt = record.at;
    if (record.kind === 'system-event') session.pending.push(pendingText(record.text));
    else if (record.kind === 'heartbeat') session.pending = [];
    if (!wait) {
      session.log.write(record);
      return QUEUED;
    }
    return session.log.append(record);
  }

  /** A session's log; every segment starts with the session's header. */
  #newLog(file: string, header: () => SessionHeader, segments: readonly number[]): JsonlLog<SessionRecord> {
    return new JsonlLog<SessionRecord>(file, this.#logger, {
      resources: this.#resources,
      segmentBytes: this.#limits.segmentBytes ?? DEFAULT_STORAGE_LIMITS.segmentBytes,
      retainBytes: this.#limits.retainBytes ?? DEFAULT_STORAGE_LIMITS.sessionRetainBytes,
      segments,
      segmentHeader: header,
    });
  }

  async #load(): Promise<void> {
    try {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw stateFileError(this.#dir, err);
    }
    // Each session: its newest segment "<name>.jsonl" and its older ones "<name>.jsonl.<seq>".
    const groups = new Map<string, number[]>();
    for (const entry of await readdir(this.#dir, { withFileTypes: true })) {
      const name = entry.name;
      const dot = name.indexOf(SUFFIX);
      if (dot <= 0) continue;
      // A directory in a session file's place would fail every write to that session later.
      if (entry.isDirectory()) throw new StateFileError(path.join(this.#dir, name), fileProblem({ code: 'EISDIR' }));
      const base = name.slice(0, dot + SUFFIX.length);
      const seq = base === name ? undefined : segmentSeq(name, base);
      if (base !== name && seq === undefined) continue; // not ours
      const seqs = groups.get(base) ?? [];
      groups.set(base, seqs);
      this.#listed.set(base, seqs);
      if (seq !== undefined) seqs.push(seq);
    }
    const names = [...groups.keys()].sort();
    // Several sessions at a time: each takes a few small reads, whose waits one after another made a
    // start with many sessions slow (docs/performance.md). A name holds one key only: no two collide.
    let next = 0;
    const loadNext = async (): Promise<void> => {
      while (next < names.length) {
        const name = names[next++]!;
        try {
          const state = await this.#loadSession(name, groups.get(name)!);
          if (state) this.#sessions.set(state.key, state);
        } catch (err) {
          this.#logger.warn(`session store: could not read ${path.join(this.#dir, name)}; ignoring it`, {
            file: path.join(this.#dir, name),
            code: errnoCode(err),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, names.length) }, loadNext));
  }

  /**
   * Takes a session's key from its header (or its file name) and its state from the tail of its log,
   * in one read of the tail: its first record is a segment's header, so no read of its own is needed.
   */
  async #loadSession(name: string, segments: readonly number[]): Promise<SessionState | undefined> {
    const file = path.join(this.#dir, name);
    // Filled in once the key is known; nothing is written before that.
    let header: SessionHeader | undefined;
    const log = this.#newLog(file, () => header!, segments);
    let state: SessionState | undefined;
    let refusal: string | undefined;
    let updatedAt: unknown;
    const identify = (head: SessionRecord | undefined): SessionState | undefined => {
      const key = head && isHeader(head) ? head.key : decodeSessionFileName(name);
      if (key === undefined) refusal = 'has no session header and an undecodable name';
      else if (sessionFileName(key) !== name) refusal = 'holds a session whose key maps to another file';
      if (refusal !== undefined || key === undefined) return undefined;
      const agentId =
        head && isHeader(head) && typeof head.agentId === 'string' && head.agentId !== ''
          ? head.agentId
          : agentIdOfKey(key);
      const createdAt =
        head && isHeader(head) && typeof head.createdAt === 'string' ? head.createdAt : new Date(0).toISOString();
      header = { kind: 'session', key, agentId, createdAt };
      return { key, agentId, updatedAt: createdAt, log, pending: [] };
    };
    await log.scanTail((records) => {
      if (refusal !== undefined) return;
      state ??= identify(records[0]);
      if (!state) return;
      this.#onFileRead?.(state.key, records);
      for (const r of records) {
        if (!isEntry(r)) continue;
        updatedAt = r.at;
        if (r.kind === 'system-event') state.pending.push(pendingText(r.text));
        else if (r.kind === 'heartbeat') state.pending = [];
      }
    });
    // An empty log: the name alone says whose it is.
    if (!state && refusal === undefined) state = identify(undefined);
    if (!state) {
      this.#logger.warn(`session store: ${file} ${refusal}; ignoring it`, { file });
      await log.close();
      return undefined;
    }
    if (typeof updatedAt === 'string') state.updatedAt = updatedAt;
    return state;
  }
}
