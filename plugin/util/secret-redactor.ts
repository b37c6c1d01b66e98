// Known secrets (a channel's bot token, a provider's API key), masked in every form a peer may echo
// them: as given, in any letter case, URL-encoded, JSON-escaped, base64 and base64url (also inside a
// longer base64 text, such as a Basic credential), and with zero-width characters inside them. Every
// path that shows a peer's text (channel descriptions, provider errors, run errors, failure reasons)
// passes it through one of these; the core's pattern masks (failures/failure-reason.ts) catch what
// looks like a credential but is not known.

const MASK = '[redacted]';
/** A shorter value is no credential, and masking it would garble ordinary text. */
const MIN_SECRET = 4;
/** A base64 fragment shorter than this could match ordinary text. */
const MIN_ENCODED = 8;
/** Zero-width and invisible characters a peer may slip between a secret's characters. */
const INVISIBLE = /[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]/;
const INVISIBLE_ALL = new RegExp(INVISIBLE.source, 'g');

/**
 * The base64 characters that encode `secret` whatever precedes it in the encoded data: the secret
 * starts at one of three offsets within a 3-byte group, so three encodings cover every case, each
 * with its edge characters (those mixing in the neighbours' bits) removed.
 */
function base64Cores(secret: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), secret])
      .toString('base64')
      .replace(/=+$/, '');
    // The first characters hold bits of the bytes before the secret; the last one, when the data
    // does not end on a group, bits of the bytes after it.
    const head = [0, 2, 3][offset]!;
    const tail = (offset + secret.length) % 3 === 0 ? 0 : 1;
    const core = encoded.slice(head, encoded.length - tail);
    if (core.length >= MIN_ENCODED) cores.push(core);
  }
  return cores;
}

/** Every form of one secret to look for, before case folding. */
function formsOf(secret: string): string[] {
  const literal = new Set([
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ s: secret }).toString().slice(2),
    JSON.stringify(secret).slice(1, -1),
    JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/'),
  ]);
  const forms = [...literal];
  // base64 of each: a JSON document or a query string, encoded whole (a JWT, a Basic credential).
  for (const form of literal) {
    for (const core of base64Cores(Buffer.from(form, 'utf8'))) {
      forms.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
    }
  }
  return forms;
}

/**
 * The text folded for matching: lower case, invisible characters left out; `at[i]` is the index in
 * the original text of the folded text's character i (a character whose lower case has another
 * length is kept as it is).
 */
function fold(text: string): { folded: string; at: number[] | undefined } {
  const lower = text.toLowerCase();
  if (lower.length === text.length && !INVISIBLE.test(text)) return { folded: lower, at: undefined };
  const chars: string[] = [];
  const at: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (INVISIBLE.test(c)) continue;
    const l = c.toLowerCase();
    chars.push(l.length === 1 ? l : c);
    at.push(i);
  }
  return { folded: chars.join(''), at };
}

export class SecretRedactor {
  /** Folded needles, longest first, so a secret holding another is masked whole. */
  readonly #needles: string[];

  constructor(secrets: Iterable<string>) {
    const needles = new Set<string>();
    for (const secret of secrets) {
      const plain = secret.replace(INVISIBLE_ALL, '');
      if (plain.trim().length < MIN_SECRET) continue;
      for (const form of formsOf(plain)) needles.add(fold(form).folded);
    }
    this.#needles = [...needles].sort((a, b) => b.length - a.length);
  }

  /** Whether there is anything to mask. */
  get empty(): boolean {
    return this.#needles.length === 0;
  }

  /** The text with every form of every secret replaced by "[redacted]". */
  redact(text: string): string {
    if (this.#needles.length === 0 || text.length < MIN_SECRET) return text;
    const { folded, at } = fold(text);
    const ranges: [number, number][] = [];
    for (const needle of this.#needles) {
      for (let i = folded.indexOf(needle); i >= 0; i = folded.indexOf(needle, i + needle.length)) {
        const start = at ? at[i]! : i;
        const end = at ? at[i + needle.length - 1]! + 1 : i + needle.length;
        ranges.push([start, end]);
      }
    }
    if (ranges.length === 0) return text;
    ranges.sort((a, b) => a[0] - b[0]);
    let out = '';
    let pos = 0;
    for (const [start, end] of ranges) {
      if (end <= pos) continue;
      if (start >= pos) out += text.slice(pos, start) + MASK;
      pos = end;
    }
    return out + text.slice(pos);
  }
}

/** A redactor for the secrets `list()` gives, made again only when the list changes (a reload). */
export function cachedRedactor(list: () => readonly string[]): (text: string) => string {
  let key: string | undefined;
  let redactor = new SecretRedactor([]);
  return (text) => {
    const secrets = list();
    const next = secrets.join('\u0000');
    if (next !== key) {
      key = next;
      redactor = new SecretRedactor(secrets);
    }
    return redactor.redact(text);
  };
}
