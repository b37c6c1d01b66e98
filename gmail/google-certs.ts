// Google's public signing keys (JWKS) for the OIDC tokens Pub/Sub push attaches. Cached for the
// hour; a token with an unknown key id fetches them again (Google rotates keys), but at
// most once per REFETCH_MS, so forged key ids cannot make us hammer the endpoint.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { googleRequest } from './google-request.ts';

const CACHE_MS = 3600_000;
const REFETCH_MS = 2_000;

export class GoogleCerts {
  #keys = new Map<string, KeyObject>();
  #expiresAt = 0;
  #fetchedAt = 0;
  #pending: Promise<void> | undefined;
  /** Times the keys were fetched (for tests and status). */
  fetches = 0;

  constructor(
    private readonly url: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The RSA key with this id, or undefined when Google does not publish it. */
  async key(kid: string): Promise<KeyObject | undefined> {
    const now = this.now();
    if (now >= this.#expiresAt) await this.#refresh();
    else if (!this.#keys.has(kid) && now - this.#fetchedAt >= REFETCH_MS) await this.#refresh();
    return this.#keys.get(kid);
  }

  #refresh(): Promise<void> {
    this.#pending ??= this.#fetch().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  async #fetch(): Promise<void> {
    this.#fetchedAt = this.now();
    const body = await googleRequest<{ keys?: unknown }>({
      step: 'fetch Google signing keys',
      url: this.url,
      timeoutMs: 10_000,
    });
    const keys = new Map<string, KeyObject>();
    for (const jwk of Array.isArray(body.keys) ? body.keys : []) {
      const k = jwk as { kid?: unknown; kty?: unknown; alg?: unknown; n?: unknown; e?: unknown };
      if (typeof k.kid !== 'string' || k.kty !== 'RSA' || (k.alg !== undefined && k.alg !== 'RS256')) continue;
      try {
        keys.set(k.kid, createPublicKey({ key: { kty: 'RSA', n: k.n, e: k.e } as never, format: 'jwk' }));
      } catch {
        // a malformed key is skipped; the others still work
      }
    }
    this.#keys = keys;
    this.fetches++;
    this.#expiresAt = this.now() + CACHE_MS;
  }
}
