// Hook sessions do not pile up (hooks.sessionRetention): a run's own one-off `hook:<uuid>` session
// (one the request, its mapping or hooks.defaultSessionKey did not name) is deleted through the
// host's sessions.deleteSession N seconds after the run's final outcome. The deletions still to come
// are kept in <stateDir>/session-retention.jsonl (each with its run's end) on one DueQueue, so a
// restart forgets none: a start schedules each by the retention then in force, and one whose time
// passed while the process was down goes at once. Named sessions and the main session never go.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AcceptedRun, GatewayHost } from '../host.ts';
import { DueQueue } from '../retry/due-queue.ts';
import { StateFile } from '../util/state-file.ts';
import { errorMessage } from '../util/errors.ts';

/** The slice of the settings it reads: hooks.sessionRetention.seconds in ms (0 keeps sessions). */
export interface SessionRetentionSettings {
  readonly sessionRetentionMs: number;
}

interface PendingDeletion {
  sessionKey: string;
  agentId: string;
  /** When its run ended (ms since the epoch): it goes the retention later. */
  endedAt: number;
}

/** A deletion the host refused is tried again this much later. */
const AGAIN_AFTER_MS = 60 * 60 * 1000;

function isPendingDeletion(value: unknown): value is PendingDeletion {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Partial<PendingDeletion>;
  return typeof r.sessionKey === 'string' && typeof r.agentId === 'string' && typeof r.endedAt === 'number';
}

export class SessionRetention {
  readonly #file: StateFile<PendingDeletion>;
  readonly #queue: DueQueue<PendingDeletion>;
  readonly #host: GatewayHost;
  readonly #settings: () => SessionRetentionSettings;
  readonly #under = new Set<Promise<void>>();

  private constructor(file: StateFile<PendingDeletion>, host: GatewayHost, settings: () => SessionRetentionSettings) {
    this.#file = file;
    this.#host = host;
    this.#settings = settings;
    this.#queue = new DueQueue((pending) => this.#track(this.#delete(pending)));
  }

  /** Reads the deletions a past process left and schedules them (overdue ones at once). */
  static async open(host: GatewayHost, settings: () => SessionRetentionSettings): Promise<SessionRetention> {
    const { stateDir } = host;
    if (stateDir !== undefined) await mkdir(stateDir, { recursive: true, mode: 0o700 });
    const file = await StateFile.open(
      stateDir === undefined ? undefined : path.join(stateDir, 'session-retention.jsonl'),
      isPendingDeletion,
      host.logger,
      { sync: host.fileSync },
    );
    const retention = new SessionRetention(file, host, settings);
    const { sessionRetentionMs } = settings();
    // Retention 0 keeps sessions: the deletions wait on disk for a start with a retention again.
    if (sessionRetentionMs > 0 && host.sessions.deleteSession) {
      for (const [key, pending] of file.records)
        retention.#queue.add(key, pending.endedAt + sessionRetentionMs, pending);
    }
    return retention;
  }

  /** Deletions waiting for their time. */
  get pending(): number {
    return this.#queue.size;
  }

  /** A run reached its final outcome: its one-off session is scheduled to go, if the host can delete one. */
  runEnded(run: Readonly<AcceptedRun>): void {
    const { sessionRetentionMs } = this.#settings();
    if (run.oneOffSession !== true || sessionRetentionMs <= 0 || !this.#host.sessions.deleteSession) return;
    // Never the main session, whatever a run record says.
    if (run.sessionKey === this.#host.sessions.mainSessionKey(run.agentId)) return;
    const pending: PendingDeletion = { sessionKey: run.sessionKey, agentId: run.agentId, endedAt: Date.now() };
    this.#queue.add(run.sessionKey, pending.endedAt + sessionRetentionMs, pending);
    this.#file.put(run.sessionKey, pending).catch((err: unknown) =>
      this.#host.logger.error('a hook session deletion could not be kept on disk', {
        reason: errorMessage(err),
      }),
    );
  }

  async #delete(pending: PendingDeletion): Promise<void> {
    try {
      await this.#host.sessions.deleteSession!(pending.sessionKey);
      await this.#file.remove(pending.sessionKey);
    } catch (err) {
      // The session key is a hook's own uuid: it may be logged; the reason is the host's.
      this.#host.logger.warn('a hook session could not be deleted; trying again later', {
        sessionKey: pending.sessionKey,
        reason: errorMessage(err),
      });
      this.#queue.add(pending.sessionKey, Date.now() + AGAIN_AFTER_MS, pending);
    }
  }

  #track(p: Promise<void>): void {
    this.#under.add(p);
    void p.finally(() => this.#under.delete(p));
  }

  /** Stops the timer; deletions not yet due stay on disk for the next start. */
  async close(): Promise<void> {
    this.#queue.close();
    await Promise.allSettled([...this.#under]);
    await this.#file.close();
  }
}
