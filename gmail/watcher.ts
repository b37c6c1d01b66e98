// The Gmail watcher behind `hookgate webhooks gmail run` and `hookgate gateway`: keeps the Gmail watch
// (renewed at start and every renewEveryMinutes), takes notifications (pull from the subscription, or
// pushes on its own server), and syncs: history from the stored cursor, new messages posted to the
// gmail hook, then the cursor stored, then the notifications acknowledged. A failure is retried with
// capped exponential backoff; nothing is acknowledged before the hook accepted it. One sync runs at a
// time; notifications arriving meanwhile are folded into one more sync after it.
import type { Logger } from '../plugin/host.ts';
import { AccessTokenSource } from './access-token.ts';
import { Backoff, DEFAULT_BACKOFF, pause, type BackoffOptions } from './backoff.ts';
import { GmailApi } from './gmail-api.ts';
import { readGmailCredentials } from './gmail-credentials.ts';
import { readGmailCursor, writeGmailCursor } from './gmail-cursor.ts';
import type { GmailSettings } from './gmail-settings.ts';
import type { GoogleEndpoints } from './google-endpoints.ts';
import { GoogleApiError } from './google-request.ts';
import { GoogleCerts } from './google-certs.ts';
import { postMessages, type HookTarget } from './hook-poster.ts';
import { syncHistory } from './history-sync.ts';
import { PubSubPull } from './pubsub-pull.ts';
import { startPushServer, type PushServer } from './push-server.ts';
import { errorMessage } from '../plugin/util/errors.ts';
import { isoTime } from '../plugin/util/time-bounds.ts';

/** Empty pulls are at least this far apart. */
const MIN_PULL_INTERVAL_MS = 1000;

export interface GmailWatcherState {
  account: string;
  mode: 'pull' | 'push';
  /** ISO time Gmail drops the watch unless it is renewed. */
  watchExpiresAt: string | null;
  /** The stored history id: everything up to it was accepted by the hook. */
  cursor: string | null;
  lastNotificationAt: string | null;
  /** The last failure, until a sync succeeds again. */
  lastError: { at: string; message: string } | null;
  lastSyncAt: string | null;
  /** Push mode: where the push server listens. */
  pushUrl?: string;
}

/** Counters since the watcher started (a metrics module reads them; no metrics library here). */
export interface GmailWatcherCounters {
  notifications: number;
  messagesDelivered: number;
  messagesSkipped: number;
  syncs: number;
  resyncs: number;
  watchRenewals: number;
  errors: number;
}

export interface GmailWatcherOptions {
  settings: GmailSettings;
  stateDir: string;
  endpoints: GoogleEndpoints;
  hook: HookTarget;
  logger: Logger;
  backoff?: BackoffOptions;
  /** Called when the state changes (the CLI keeps a status file from it). */
  onState?: (state: GmailWatcherState, counters: GmailWatcherCounters) => void;
  /** A line for long work (a resync), e.g. to stderr. */
  progress?: (line: string) => void;
  /** Told of notifications and failures as they happen (the gateway counts them in /metrics). */
  events?: { notifications(count: number): void; error(stage: GmailFailureStage): void };
}

/** Where the watcher can fail (the stage label of hookgate_gmail_errors_total). */
export const GMAIL_FAILURE_STAGES = ['watch', 'history', 'fetch', 'deliver', 'other'] as const;
export type GmailFailureStage = (typeof GMAIL_FAILURE_STAGES)[number];

function failureStage(err: unknown, what: string): GmailFailureStage {
  if (what === 'watch renewal') return 'watch';
  if (!(err instanceof GoogleApiError)) return 'deliver';
  if (err.step.includes('history') || err.step.includes('messages.list')) return 'history';
  if (err.step.includes('messages.get')) return 'fetch';
  return 'other';
}

export class GmailWatcher {
  readonly counters: GmailWatcherCounters = {
    notifications: 0,
    messagesDelivered: 0,
    messagesSkipped: 0,
    syncs: 0,
    resyncs: 0,
    watchRenewals: 0,
    errors: 0,
  };
  readonly #o: GmailWatcherOptions;
  readonly #state: GmailWatcherState;
  readonly #stop = new AbortController();
  #client: Promise<{ gmail: GmailApi; tokens: AccessTokenSource }> | undefined;
  #push: PushServer | undefined;
  #loops: Promise<void>[] = [];
  /** The sync under way, and whether another was asked for while it ran. */
  #sync: Promise<void> | undefined;
  #next: Promise<void> | undefined;

  constructor(options: GmailWatcherOptions) {
    this.#o = options;
    this.#state = {
      account: options.settings.account,
      mode: options.settings.mode,
      watchExpiresAt: null,
      cursor: null,
      lastNotificationAt: null,
      lastError: null,
      lastSyncAt: null,
    };
  }

  /** A copy of the state, with the counters. */
  state(): GmailWatcherState & { counters: GmailWatcherCounters } {
    return { ...this.#state, counters: { ...this.counters } };
  }

  /** Starts the loops; resolves once the push server (push mode) listens. Failures go to lastError. */
  async start(): Promise<void> {
    const { settings, stateDir } = this.#o;
    const stored = await readGmailCursor(stateDir, settings.account);
    if (stored) this.#state.cursor = stored.historyId;
    this.#loops.push(this.#renewLoop());
    if (settings.mode === 'push') {
      this.#push = await startPushServer({
        ...settings.serve,
        audience: settings.pushEndpoint!,
        serviceAccount: settings.pushServiceAccount,
        account: settings.account,
        certs: new GoogleCerts(this.#o.endpoints.certs),
        logger: this.#o.logger,
        onNotification: async () => {
          this.#notified(1);
          try {
            await this.#syncNow();
          } catch (err) {
            this.#failed(err, 'sync');
            throw err;
          }
        },
      });
      this.#state.pushUrl = this.#push.url;
      this.#o.logger.info('gmail push server listening', { url: this.#push.url });
      this.#loops.push(this.#catchUpLoop());
    } else {
      this.#loops.push(this.#pullLoop());
    }
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#push?.close();
    await Promise.allSettled(this.#loops);
    await this.#sync?.catch(() => {});
  }

  get #stopped(): boolean {
    return this.#stop.signal.aborted;
  }

  /** The Gmail client, built from the stored credentials (read again after a revoked grant). */
  #api(): Promise<{ gmail: GmailApi; tokens: AccessTokenSource }> {
    // One client for the renewal and the sync loops, built once (and again after a revoked grant).
    this.#client ??= readGmailCredentials(this.#o.stateDir, this.#o.settings.account).then(
      (credentials) => {
        // The stop ends any Google call under way: a stalled peer never holds the gateway's stop.
        const signal = this.#stop.signal;
        const tokens = new AccessTokenSource({ credentials, tokenUrl: this.#o.endpoints.token, signal });
        return { tokens, gmail: new GmailApi({ baseUrl: this.#o.endpoints.gmail, tokens, signal }) };
      },
      (err: unknown) => {
        this.#client = undefined;
        throw err;
      },
    );
    return this.#client;
  }

  #failed(err: unknown, what: string): void {
    if (err instanceof GoogleApiError && err.grantRevoked) {
      // setup may write a fresh refresh token: read the file again on the next attempt.
      this.#client = undefined;
    }
    const message = errorMessage(err);
    this.counters.errors++;
    this.#o.events?.error(failureStage(err, what));
    this.#state.lastError = { at: new Date().toISOString(), message };
    this.#o.logger.error(`gmail ${what} failed`, { account: this.#o.settings.account, reason: message });
    this.#changed();
  }

  #changed(): void {
    this.#o.onState?.(this.#state, this.counters);
  }

  #notified(count: number): void {
    this.counters.notifications += count;
    this.#o.events?.notifications(count);
    this.#state.lastNotificationAt = new Date().toISOString();
    this.#changed();
  }

  /** users.watch at start and every renewEveryMinutes; a failure is retried with backoff. */
  async #renewLoop(): Promise<void> {
    const backoff = new Backoff(this.#o.backoff ?? DEFAULT_BACKOFF);
    const { settings } = this.#o;
    const topic = `projects/${settings.project}/topics/${settings.topic}`;
    while (!this.#stopped) {
      let wait: number;
      try {
        const { gmail } = await this.#api();
        const watch = await gmail.watch(topic, [settings.label]);
        this.counters.watchRenewals++;
        const expires = Number(watch.expiration);
        // Google's number, read as a time only when a Date can hold it.
        this.#state.watchExpiresAt = expires > 0 ? (isoTime(expires) ?? null) : null;
        // The first watch gives the starting point when no cursor was stored.
        if (this.#state.cursor === null) {
          await writeGmailCursor(this.#o.stateDir, settings.account, watch.historyId);
          this.#state.cursor = watch.historyId;
          this.#o.logger.info('gmail cursor started', { account: settings.account });
        }
        this.#o.logger.info('gmail watch renewed', {
          account: settings.account,
          expiresAt: this.#state.watchExpiresAt ?? undefined,
        });
        this.#changed();
        backoff.reset();
        wait = settings.renewEveryMs;
      } catch (err) {
        if (this.#stopped) return;
        this.#failed(err, 'watch renewal');
        wait = backoff.next();
      }
      await pause(wait, this.#stop.signal);
    }
  }

  /** Pull mode: take notifications, sync, then acknowledge them; retry with backoff on failure. */
  async #pullLoop(): Promise<void> {
    const backoff = new Backoff(this.#o.backoff ?? DEFAULT_BACKOFF);
    const { settings } = this.#o;
    /** Pulled and not yet acknowledged: acknowledged after the next sync that succeeds. */
    let unacked: string[] = [];
    let mustSync = true; // catch up from the stored cursor at start
    while (!this.#stopped) {
      try {
        const { tokens } = await this.#api();
        const pubsub = new PubSubPull({
          baseUrl: this.#o.endpoints.pubsub,
          project: settings.project,
          subscription: settings.subscription,
          tokens,
          signal: this.#stop.signal,
        });
        if (!mustSync) {
          const began = Date.now();
          const pulled = await pubsub.pull(100, this.#stop.signal);
          if (this.#stopped) return;
          if (pulled.length === 0) {
            // Pub/Sub may answer an empty pull at once: never spin on those.
            await pause(MIN_PULL_INTERVAL_MS - (Date.now() - began), this.#stop.signal);
            continue;
          }
          this.#notified(pulled.length);
          unacked.push(...pulled.map((m) => m.ackId));
        }
        mustSync = true;
        await this.#syncNow();
        mustSync = false;
        if (unacked.length) {
          await pubsub.acknowledge(unacked);
          unacked = [];
        }
        backoff.reset();
      } catch (err) {
        if (this.#stopped) return;
        this.#failed(err, 'sync');
        await pause(backoff.next(), this.#stop.signal);
      }
    }
  }

  /** Push mode: catch up from the stored cursor at start, retrying until it succeeds once. */
  async #catchUpLoop(): Promise<void> {
    const backoff = new Backoff(this.#o.backoff ?? DEFAULT_BACKOFF);
    while (!this.#stopped) {
      try {
        await this.#syncNow();
        return;
      } catch (err) {
        if (this.#stopped) return;
        this.#failed(err, 'sync');
        await pause(backoff.next(), this.#stop.signal);
      }
    }
  }

  /**
   * Runs a sync now, or, while one is under way, one more after it (a notification may have come after
   * it listed the history); every caller meanwhile shares that one.
   */
  #syncNow(): Promise<void> {
    if (!this.#sync) return this.#startSync();
    this.#next ??= this.#sync
      .catch(() => {})
      .then(() => {
        this.#next = undefined;
        return this.#startSync();
      });
    return this.#next;
  }

  #startSync(): Promise<void> {
    const run: Promise<void> = this.#syncOnce().finally(() => {
      if (this.#sync === run) this.#sync = undefined;
    });
    this.#sync = run;
    return run;
  }

  async #syncOnce(): Promise<void> {
    const { settings, stateDir } = this.#o;
    const { gmail } = await this.#api();
    if (this.#state.cursor === null) {
      // No cursor and no watch yet: start from now.
      const now = await gmail.currentHistoryId();
      await writeGmailCursor(stateDir, settings.account, now);
      this.#state.cursor = now;
    }
    const result = await syncHistory({
      gmail,
      cursor: this.#state.cursor,
      label: settings.label,
      resyncMessages: settings.resyncMessages,
      text: { includeBody: settings.includeBody, maxBytes: settings.maxBytes },
      post: async (messages) => {
        await postMessages(messages, this.#o.hook);
        this.counters.messagesDelivered += messages.length;
      },
      progress: (done, total, what) => this.#o.progress?.(`gmail ${what}: ${done}/${total} messages`),
    });
    if (result.resynced) {
      this.counters.resyncs++;
      this.#o.logger.warn('gmail history cursor too old; resynced the newest messages', {
        account: settings.account,
        messages: result.delivered,
      });
    }
    await writeGmailCursor(stateDir, settings.account, result.cursor);
    this.#state.cursor = result.cursor;
    this.counters.syncs++;
    this.counters.messagesSkipped += result.skipped;
    this.#state.lastSyncAt = new Date().toISOString();
    this.#state.lastError = null;
    if (result.delivered || result.skipped) {
      this.#o.logger.info('gmail messages delivered', {
        account: settings.account,
        delivered: result.delivered,
        skipped: result.skipped,
      });
    }
    this.#changed();
  }
}
