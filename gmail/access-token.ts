// Access tokens from the stored refresh token (the OAuth refresh-token grant), cached until shortly
// before they expire. Callers invalidate a token Google refused with 401; the next get() refreshes.
// Concurrent callers share one refresh. A revoked or expired grant (invalid_grant) surfaces as a
// GoogleApiError whose hint says to run setup again.
import type { GmailCredentials } from './gmail-credentials.ts';
import { GoogleApiError, googleRequest } from './google-request.ts';

/** Refresh this long before Google's expiry, so a token never dies in flight. */
const EARLY_MS = 60_000;

export interface AccessTokenOptions {
  credentials: GmailCredentials;
  tokenUrl: string;
  timeoutMs?: number;
  /** Ends a refresh under way at once (the watcher's stop). */
  signal?: AbortSignal;
  now?: () => number;
}

export class AccessTokenSource {
  readonly #options: AccessTokenOptions;
  #token: string | undefined;
  #refreshAt = 0;
  #pending: Promise<string> | undefined;
  /** How many times a token was fetched (for tests and status). */
  refreshes = 0;

  constructor(options: AccessTokenOptions) {
    this.#options = options;
  }

  /** Runs `call` with a token; a 401 invalidates that token and retries once with a fresh one. */
  async authorized<T>(call: (accessToken: string) => Promise<T>): Promise<T> {
    const token = await this.get();
    try {
      return await call(token);
    } catch (err) {
      if (!(err instanceof GoogleApiError) || err.status !== 401) throw err;
      this.invalidate(token);
      return call(await this.get());
    }
  }

  async get(): Promise<string> {
    const now = (this.#options.now ?? Date.now)();
    if (this.#token !== undefined && now < this.#refreshAt) return this.#token;
    this.#pending ??= this.#refresh().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  /** Forget `token` (Google answered 401 with it); a newer token is kept. */
  invalidate(token?: string): void {
    if (token === undefined || token === this.#token) {
      this.#token = undefined;
      this.#refreshAt = 0;
    }
  }

  async #refresh(): Promise<string> {
    const { credentials } = this.#options;
    const body = await googleRequest<{ access_token?: unknown; expires_in?: unknown }>({
      step: 'access token refresh',
      url: this.#options.tokenUrl,
      form: {
        grant_type: 'refresh_token',
        client_id: credentials.client_id,
        client_secret: credentials.client_secret,
        refresh_token: credentials.refresh_token,
      },
      timeoutMs: this.#options.timeoutMs,
      signal: this.#options.signal,
    });
    if (typeof body.access_token !== 'string' || body.access_token === '') {
      throw new Error('access token refresh failed: the token endpoint answered without an access_token');
    }
    const seconds = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600;
    this.#token = body.access_token;
    // Short-lived tokens (tests) are refreshed at half their life rather than a minute early.
    this.#refreshAt = (this.#options.now ?? Date.now)() + seconds * 1000 - Math.min(EARLY_MS, seconds * 500);
    this.refreshes++;
    return this.#token;
  }
}
