// The console's sessions: a random id in an HttpOnly cookie, and with it the anti-forgery token the
// page sends back in a header on every change. Kept in memory only (a restart logs everyone out);
// each session remembers a fingerprint of the gateway token it was opened with, and a different
// token in force ends every session at once (a token rotated after a leak locks the leaker out).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { TokenDigest } from '../auth/token.ts';

/** Sessions kept at most: past it, the oldest is ended (a login flood cannot grow the map). */
export const MAX_SESSIONS = 1000;

export interface ConsoleSession {
  readonly id: string;
  /** Sent in the x-hookgate-csrf header on every change; given to the page by GET <mount>api/session. */
  readonly csrf: string;
  readonly expiresAt: number;
}

/** A fingerprint of a gateway token (as digested for comparing): sessions compare it, never the token. */
export function tokenPrint(digest: TokenDigest): string {
  const hash = createHash('sha256').update('hookgate console\0').update(String(digest.bytes));
  return hash.update(digest.padded ?? digest.sha256 ?? Buffer.alloc(0)).digest('base64url');
}

/** Equal strings in constant time (lengths may leak: ids and tokens have fixed lengths). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class ConsoleSessions {
  readonly #sessions = new Map<string, ConsoleSession>();
  #print: string | undefined;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Ends every session when the token in force is not the one they were opened with. */
  follow(currentPrint: string): void {
    if (this.#print === currentPrint) return;
    this.#sessions.clear();
    this.#print = currentPrint;
  }

  open(lifetimeMs: number): ConsoleSession {
    if (this.#sessions.size >= MAX_SESSIONS) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest !== undefined) this.#sessions.delete(oldest);
    }
    const session = {
      id: randomBytes(32).toString('base64url'),
      csrf: randomBytes(32).toString('base64url'),
      expiresAt: this.#now() + lifetimeMs,
    };
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The live session of this id; an expired one is ended. */
  find(id: string | undefined): ConsoleSession | undefined {
    if (id === undefined) return undefined;
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    if (session.expiresAt <= this.#now()) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session;
  }

  end(id: string): void {
    this.#sessions.delete(id);
  }

  get size(): number {
    return this.#sessions.size;
  }
}
