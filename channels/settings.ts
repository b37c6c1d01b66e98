// Reading one `channels.<name>` block: its secrets (a literal, "${NAME}", or the `…File` key), its
// URLs, and whether it has what sending needs. A block with no credential at all is a recorded-only
// channel (what `npm start` writes); one with half a credential is a config error naming the key.

import { readSecretFile, resolveSecret } from '../plugin/kits/config.ts';

/** No platform takes this long to accept one message; past it the attempt counts as unanswered. */
const DEFAULT_TIMEOUT_MS = 30_000;

export type RawChannel = Record<string, unknown>;

export class ChannelBlock {
  /** Every secret read, for the redactor. */
  readonly secrets: string[] = [];

  constructor(
    readonly raw: RawChannel,
    /** e.g. channels.telegram */
    readonly key: string,
    readonly configDir: string,
    readonly problems: string[],
  ) {}

  has(name: string): boolean {
    return this.raw[name] !== undefined || this.raw[`${name}File`] !== undefined;
  }

  /** A secret given as `name` or `nameFile`; undefined (with a problem when `required`) if missing. */
  secret(name: string, required = true): string | undefined {
    const literal = this.raw[name];
    const file = this.raw[`${name}File`];
    if (literal !== undefined && file !== undefined) {
      this.problems.push(`${this.key}: give ${name} or ${name}File, not both`);
      return undefined;
    }
    let value: string | undefined;
    if (typeof literal === 'string') value = resolveSecret(literal, `${this.key}.${name}`, this.problems);
    else if (typeof file === 'string')
      value = readSecretFile(file, this.configDir, `${this.key}.${name}File`, this.problems);
    else if (required) this.problems.push(`${this.key}.${name} (or ${name}File) is required`);
    if (value !== undefined) this.secrets.push(value);
    return value;
  }

  /** A plain string value. */
  text(name: string, required = false): string | undefined {
    const v = this.raw[name];
    if (typeof v === 'string' && v.trim()) return v.trim();
    if (required) this.problems.push(`${this.key}.${name} is required`);
    return undefined;
  }

  /** An http(s) origin or URL, without a trailing slash. */
  url(name: string, value: string | undefined, fallback?: string): string | undefined {
    const v = value ?? fallback;
    if (v === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(v);
    } catch {
      this.problems.push(`${this.key}.${name} is not a URL`);
      return undefined;
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      this.problems.push(`${this.key}.${name} must be an http or https URL`);
      return undefined;
    }
    return v.replace(/\/+$/, '');
  }

  /** `timeoutSeconds` in ms: one request to the platform, from sending it to its answer's last byte. */
  get timeoutMs(): number {
    const seconds = this.raw.timeoutSeconds;
    return typeof seconds === 'number' ? Math.round(seconds * 1000) : DEFAULT_TIMEOUT_MS;
  }

  /** `apiRoot`: the origin replacing the platform's own (tests point it at a fake). */
  apiRoot(official: string): string {
    return this.url('apiRoot', this.text('apiRoot'), official) ?? official;
  }

  /** A URL given as a secret (a webhook URL carries its own credential): also its long parts redacted. */
  secretUrl(name: string): string | undefined {
    const value = this.secret(name);
    if (value === undefined) return undefined;
    const url = this.url(name, value);
    if (url === undefined) return undefined;
    const parsed = new URL(url);
    for (const part of parsed.pathname.split('/')) if (part.length >= 16) this.secrets.push(safeDecode(part));
    for (const v of parsed.searchParams.values()) if (v.length >= 16) this.secrets.push(v);
    return url;
  }
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
