// The watcher's state on disk, <stateDir>/data/gmail-<account>.status.json, so that `webhooks gmail
// status` and the gateway's GET /api/gmail can show a watcher that runs in another process
// (`webhooks gmail run`). Written atomically, at most every WRITE_EVERY_MS.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../plugin/util/write-file-atomic.ts';
import { assertAccountName } from './gmail-credentials.ts';
import type { GmailWatcherCounters, GmailWatcherState } from './watcher.ts';

const WRITE_EVERY_MS = 250;

export type GmailStatus = GmailWatcherState & { counters: GmailWatcherCounters; pid: number; updatedAt: string };

export function gmailStatusPath(stateDir: string, account: string): string {
  assertAccountName(account);
  return path.join(stateDir, 'data', `gmail-${account}.status.json`);
}

export async function readGmailStatus(stateDir: string, account: string): Promise<GmailStatus | undefined> {
  try {
    return JSON.parse(await readFile(gmailStatusPath(stateDir, account), 'utf8')) as GmailStatus;
  } catch {
    return undefined;
  }
}

/** Keeps the file up to date with the latest state; flush() writes what is pending. */
export class GmailStatusWriter {
  #latest: GmailStatus | undefined;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(private readonly file: string) {}

  update(state: GmailWatcherState, counters: GmailWatcherCounters): void {
    this.#latest = { ...state, counters: { ...counters }, pid: process.pid, updatedAt: new Date().toISOString() };
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, WRITE_EVERY_MS);
  }

  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    const status = this.#latest;
    this.#latest = undefined;
    if (status)
      this.#writing = this.#writing.then(() =>
        writeFileAtomic(this.file, `${JSON.stringify(status, null, 2)}\n`).catch(() => {}),
      );
    await this.#writing;
  }
}
