// Where the watcher has read up to: the Gmail history id after the last batch the hook accepted, in
// <stateDir>/data/gmail-<account>.json, written atomically so a crash leaves the old cursor or the new.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../plugin/util/write-file-atomic.ts';
import { assertAccountName } from './gmail-credentials.ts';

export interface GmailCursor {
  historyId: string;
  updatedAt: string;
}

export function gmailCursorPath(stateDir: string, account: string): string {
  assertAccountName(account);
  return path.join(stateDir, 'data', `gmail-${account}.json`);
}

/** The stored cursor, or undefined when there is none yet (or the file is unreadable: start afresh). */
export async function readGmailCursor(stateDir: string, account: string): Promise<GmailCursor | undefined> {
  let text: string;
  try {
    text = await readFile(gmailCursorPath(stateDir, account), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const c = JSON.parse(text) as Partial<GmailCursor>;
    if (typeof c.historyId === 'string' && /^\d{1,30}$/.test(c.historyId)) {
      return { historyId: c.historyId, updatedAt: String(c.updatedAt ?? '') };
    }
  } catch {
    // A torn or hand-edited file: treated as no cursor (the watch's history id takes over).
  }
  return undefined;
}

export async function writeGmailCursor(stateDir: string, account: string, historyId: string): Promise<GmailCursor> {
  const cursor = { historyId, updatedAt: new Date().toISOString() };
  await writeFileAtomic(gmailCursorPath(stateDir, account), `${JSON.stringify(cursor)}\n`, { mode: 0o600 });
  return cursor;
}

/** Gmail history ids are increasing integers, larger than a double holds exactly: compare as BigInt. */
export function historyIdAfter(a: string, b: string): boolean {
  return BigInt(a) > BigInt(b);
}
