// Every configured secret value, removed from any text a platform sends back before the text leaves
// the sender: a platform error may echo the request URL (Telegram's token is in its path, BlueBubbles'
// password in its query), and an error message must never carry either.

const MASK = '[redacted]';

export class Redactor {
  readonly #needles: string[];

  constructor(secrets: Iterable<string>) {
    const forms = new Set<string>();
    for (const s of secrets) {
      if (s.length < 4) continue; // too short to be a credential; masking it would garble text
      forms.add(s);
      forms.add(encodeURIComponent(s));
      forms.add(new URLSearchParams({ s }).toString().slice(2));
      forms.add(JSON.stringify(s).slice(1, -1));
    }
    // Longest first, so a secret holding another is masked whole.
    this.#needles = [...forms].sort((a, b) => b.length - a.length);
  }

  /** The text with every secret masked; also clipped, so a platform cannot flood the log. */
  clean(text: string, max = 500): string {
    let out = text;
    for (const needle of this.#needles) if (out.includes(needle)) out = out.split(needle).join(MASK);
    out = out.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
    return out.length > max ? `${out.slice(0, max)}…` : out;
  }
}
