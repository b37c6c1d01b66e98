// Every configured secret value, removed from any text a platform sends back before the text leaves
// the sender: a platform error may echo the request URL (Telegram's token is in its path, BlueBubbles'
// password in its query), and an error message must never carry either, in any form it is echoed in
// (the shared redactor, plugin/util/secret-redactor.ts: letter case, URL and JSON escapes, base64,
// zero-width characters).
import { SecretRedactor } from '../plugin/util/secret-redactor.ts';

export class Redactor {
  readonly #secrets: SecretRedactor;

  constructor(secrets: Iterable<string>) {
    this.#secrets = new SecretRedactor(secrets);
  }

  /** The text with every secret masked; also clipped, so a platform cannot flood the log. */
  clean(text: string, max = 500): string {
    let out = this.#secrets.redact(text);
    out = out.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
    return out.length > max ? `${out.slice(0, max)}…` : out;
  }
}
