// Per-session history for the standalone gateway: one JSONL file per session under <stateDir>/sessions.
//
// File names: the UTF-8 bytes of the session key, with [a-z0-9_-] kept and every other byte written as
// "%" + two lowercase hex digits, then ".jsonl". So "agent:main:main" is "agent%3amain%3amain.jsonl".
// The result never contains "/", "\", "." (so no "..") or upper-case letters (safe on case-insensitive
// file systems) and decodes back to the key. Names that would exceed MAX_NAME_BYTES keep a readable
// prefix and end in "~" + a SHA-256 of the key; "~" never appears in a plain encoding, so those names
// are recognised as not decodable. Every file starts with a header record carrying the real key, which
// is what open() trusts. Besides the history entries a file holds the status lines of the runs in that
// session (run-registry.ts), which history() leaves out.

import { createHash } from 'node:crypto';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../host-kit.ts';
import { JsonlLog } from './jsonl-log.ts';
import { LoadOnce } from '../../util/load-once.ts';
import { isoNow } from '../../util/iso-now.ts';
import type { RunLine } from './run-registry.ts';

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

/** Told about every session file read on open, with its key and all its records. */
export type SessionFileVisitor = (key: string, records: readonly SessionRecord[]) => void;

interface SessionState {
  key: string;
  agentId: string;
  updatedAt: string;
  log: JsonlLog<SessionRecord>;
  pending: string[];
}

const ENTRY_KINDS: ReadonlySet<string> = new Set(['system-event', 'heartbeat', 'prompt', 'reply']);
const SUFFIX = '.jsonl';
/** Well below the usual 255-byte limit for one path component. */
const MAX_NAME_BYTES = 200;
const HASHED_PREFIX_BYTES = 120;

function keptByte(b: number): boolean {
  return (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x5f;
}

function encodeKey(key: string): string {
  let out = '';
  for (const b of Buffer.from(key, 'utf8')) {
    out += keptByte(b) ? String.fromCharCode(b) : '%' + b.toString(16).padStart(2, '0');
  }
  return out;
}

/** The file name (not path) holding a session's history. */
export function sessionFileName(key: string): string {
  const encoded = encodeKey(key);
  if (encoded.length + SUFFIX.length <= MAX_NAME_BYTES) return encoded + SUFFIX;
  let prefix = encoded.slice(0, HASHED_PREFIX_BYTES);
  // Do not leave a cut-off "%x" escape at the end of the prefix.
  const lastEscape = prefix.lastIndexOf('%');
  if (lastEscape >= 0 && lastEscape > prefix.length - 3) prefix = prefix.slice(0, lastEscape);
  const hash = createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 40);
  return `${prefix}~${hash}${SUFFIX}`;
}

/** Reverses sessionFileName for names without a hash; undefined when the name is not decodable. */
export function decodeSessionFileName(name: string): string | undefined {
  if (!name.endsWith(SUFFIX)) return undefined;
  const encoded = name.slice(0, -SUFFIX.length);
  if (encoded === '' || !/^(?:[a-z0-9_-]|%[0-9a-f]{2})+$/.test(encoded)) return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; ) {
    if (encoded[i] === '%') {
      bytes.push(parseInt(encoded.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      bytes.push(encoded.charCodeAt(i));
      i += 1;
    }
  }
  const key = Buffer.from(bytes).toString('utf8');
  // Invalid UTF-8 or a non-canonical spelling does not round-trip.
  return sessionFileName(key) === name ? key : undefined;
}

/** agent:<agentId>:<rest> -> agentId; anything else belongs to "main". */
export function agentIdOfKey(key: string): string {
  const m = /^agent:([^:]+):/.exec(key);
  return m?.[1] ?? 'main';
}

function errCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
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

  constructor(dir: string, logger: Logger, onFileRead?: SessionFileVisitor) {
    this.#dir = dir;
    this.#logger = logger;
    this.#onFileRead = onFileRead;
  }

  open(): Promise<void> {
    return this.#opening.run();
  }

  append(key: string, entry: Omit<SessionEntry, 'at'> & { at?: string }): Promise<void> {
    return this.#add(key, entry, true)!;
  }

  /** Like append, for entries nobody waits for: no promise to settle (JsonlLog logs a failed write). */
  write(key: string, entry: Omit<SessionEntry, 'at'> & { at?: string }): void {
    this.#add(key, entry, false)?.catch(() => {});
  }

  /** Adds a run's status line to the session's file; with `wait`, settles once it is written. */
  recordRun(key: string, line: RunLine, wait: boolean): Promise<void> | undefined {
    const added = this.#add(key, line, wait);
    if (wait) return added;
    added?.catch(() => {});
    return undefined;
  }

  async history(key: string): Promise<SessionEntry[]> {
    if (!this.#opening.done) await this.open();
    const session = this.#sessions.get(key);
    if (!session) return [];
    const records = await session.log.readAll();
    return records.filter((r): r is SessionEntry => isEntry(r));
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

  /** A promise when asked to wait, or when the entry is refused or the store is still opening. */
  #add(key: string, entry: (Omit<SessionEntry, 'at'> & { at?: string }) | RunLine, wait: boolean): Promise<void> | undefined {
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

  #appendNow(key: string, entry: EntryInput | RunLine, wait: boolean): Promise<void> | undefined {
    // A status line is complete as given.
    if (entry.kind === 'run') return this.#addRecord(key, entry, wait);
    // Built field by field: rest/spread copies cost more than the rest of this method on the wake path.
    const record: SessionEntry = {
      kind: entry.kind,
      text: entry.text,
      at: typeof entry.at === 'string' && entry.at !== '' ? entry.at : isoNow(),
    };
    for (const k in entry) if (k !== 'kind' && k !== 'text' && k !== 'at') record[k] = (entry as Record<string, unknown>)[k];
    return this.#addRecord(key, record, wait);
  }

  /** Updates the session in memory (synchronously, in call order) and queues the record's line. */
  #addRecord(key: string, record: SessionEntry | RunLine, wait: boolean): Promise<void> | undefined {
    let session = this.#sessions.get(key);
    let header: Promise<void> | undefined;
    if (!session) {
      const agentId = agentIdOfKey(key);
      session = {
        key,
        agentId,
        updatedAt: record.at,
        log: new JsonlLog<SessionRecord>(path.join(this.#dir, sessionFileName(key)), this.#logger),
        pending: [],
      };
      this.#sessions.set(key, session);
      header = session.log.append({ kind: 'session', key, agentId, createdAt: record.at });
    }
    // The time of the last history entry: status lines are not history.
    if (record.kind !== 'run') session.updatedAt = record.at;
    if (record.kind === 'system-event') session.pending.push(pendingText(record.text));
    else if (record.kind === 'heartbeat') session.pending = [];
    if (!wait) {
      session.log.write(record);
      header?.catch(() => {});
      return undefined;
    }
    const written = session.log.append(record);
    return header ? Promise.all([header, written]).then(() => undefined) : written;
  }

  async #load(): Promise<void> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const names = (await readdir(this.#dir)).filter((n) => n.endsWith(SUFFIX)).sort();
    for (const name of names) {
      const file = path.join(this.#dir, name);
      const log = new JsonlLog<SessionRecord>(file, this.#logger);
      let records: SessionRecord[];
      try {
        records = await log.readAll();
      } catch (err) {
        this.#logger.warn(`session store: could not read ${file}; ignoring it`, {
          file,
          code: errCode(err),
        });
        continue;
      }
      const header = records.find(isHeader);
      const key = header?.key ?? decodeSessionFileName(name);
      if (key === undefined) {
        this.#logger.warn(`session store: ${file} has no session header and an undecodable name; ignoring it`, {
          file,
        });
        continue;
      }
      if (sessionFileName(key) !== name) {
        this.#logger.warn(`session store: ${file} holds a session whose key maps to another file; ignoring it`, {
          file,
        });
        continue;
      }
      this.#onFileRead?.(key, records);
      const entries = records.filter((r): r is SessionEntry => isEntry(r));
      const pending: string[] = [];
      for (const e of entries) {
        if (e.kind === 'system-event') pending.push(pendingText(e.text));
        else if (e.kind === 'heartbeat') pending.length = 0;
      }
      const last = entries[entries.length - 1];
      const updatedAt = last?.at ?? header?.createdAt ?? new Date(0).toISOString();
      this.#sessions.set(key, {
        key,
        agentId: typeof header?.agentId === 'string' && header.agentId !== '' ? header.agentId : agentIdOfKey(key),
        updatedAt: typeof updatedAt === 'string' ? updatedAt : new Date(0).toISOString(),
        log,
        pending,
      });
    }
  }
}
