// The credentials a config accepts as a sender presents them (hook tokens, a mapping's bearer, basic or
// GitLab secret, a Meta handshake's verify token), for the limiter's rotation rule: failures with a
// credential a reload made valid are forgiven, and one it retired is refused uncounted for a while.
// Each is named with its realm, so a token of one mapping is not taken for another's.
// The values sit in a private field: no log line or JSON of a snapshot can show them.

/** A hook token as presented on /wake, /agent and unsigned mappings. */
export const hookTokenCredential = (token: string): string => `token\0${token}`;

/** A credential that admits only the mapping named `name` (its match.path), in one of its realms. */
export const mappingCredential = (name: string, realm: string, presented: string): string =>
  `${realm}\0${name}\0${presented}`;

export class Credentials {
  readonly #values: ReadonlySet<string>;
  readonly #hookTokens: readonly string[];

  constructor(values: Iterable<string>, hookTokens: readonly string[] = []) {
    this.#values = new Set(values);
    this.#hookTokens = hookTokens;
  }

  /** The hook tokens in force, in the config's order (hooks.token, then hooks.tokenFile). */
  static ofHookTokens(tokens: readonly string[]): Credentials {
    return new Credentials(tokens.map(hookTokenCredential), Object.freeze([...tokens]));
  }

  with(more: Iterable<string>): Credentials {
    return new Credentials([...this.#values, ...more], this.#hookTokens);
  }

  /** The hook tokens as configured, first first: what a sender on this host posts with. */
  hookTokens(): readonly string[] {
    return this.#hookTokens;
  }

  values(): Iterable<string> {
    return this.#values;
  }

  sameAs(other: Credentials): boolean {
    if (other.#values.size !== this.#values.size) return false;
    for (const v of this.#values) if (!other.#values.has(v)) return false;
    return true;
  }

  /** Mine that `next` no longer accepts. */
  retiredBy(next: Credentials): string[] {
    return [...this.#values].filter((v) => !next.#values.has(v));
  }
}

export const NO_CREDENTIALS = new Credentials([]);
