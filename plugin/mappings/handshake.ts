// A mapping's `handshake`: how its sender proves the endpoint before it sends anything.
//   meta   GET ?hub.mode=subscribe&hub.verify_token=T&hub.challenge=C answers C when T is the verify token
//   slack  a signed { type: "url_verification", challenge } answers { challenge } (Slack Events API)
//   echo   a verified body whose `when.path` equals `when.equals` answers { challenge: <challenge path> }
// A handshake acts on nothing. Every problem names the mapping's key.
import { refuse } from '../errors.ts';
import { longEnough, resolveSecret } from '../settings/secret-values.ts';
import { sameSecret } from '../verify/proof.ts';
import { compilePath } from './template.ts';

/** As written in the config (validated by schema/mapping.schema.json). */
export interface HandshakeConfig {
  kind: 'meta' | 'slack' | 'echo';
  verifyToken?: string;
  when?: { path: string; equals: string | number | boolean };
  challenge?: string;
}

export type Handshake =
  | {
      readonly kind: 'meta';
      /** Constant time: whether the verify token sent is the configured one. */
      verify(token: string): boolean;
      /** The verify token, for the limiter's rotation rule only. */
      accepted(): string;
    }
  | {
      readonly kind: 'slack' | 'echo';
      /** The answer when the payload is a handshake, else undefined (a delivery like any other). */
      answer(payload: Record<string, unknown>): { challenge: unknown } | undefined;
    };

/** The outcome of a Meta GET: the challenge to send back, or why not (a missing or wrong token is an auth failure). */
export type MetaOutcome =
  { challenge: string } | { failed: 'token'; presented: string | undefined } | { failed: 'request' };

const payloadPath = (path: string) => compilePath(path.replace(/^payload\./, ''));

export function compileHandshake(
  h: HandshakeConfig,
  key: string,
  mapping: { matchPath: string | undefined; scheme: string | undefined },
  problems: string[],
): Handshake | undefined {
  const before = problems.length;
  if (mapping.matchPath === undefined)
    problems.push(`${key} needs match.path: a handshake is for a hook name of its own`);
  const extra = (names: readonly (keyof HandshakeConfig)[]): void => {
    for (const n of names) if (h[n] !== undefined) problems.push(`${key}.${n} does not belong to kind ${h.kind}`);
  };
  if (h.kind === 'meta') {
    extra(['when', 'challenge']);
    if (h.verifyToken === undefined) problems.push(`${key}.verifyToken is required by kind meta`);
    const token =
      h.verifyToken === undefined ? undefined : resolveSecret(h.verifyToken, `${key}.verifyToken`, problems);
    // A verify token is a shared secret like a hook token: a short one would be guessed.
    if (token !== undefined) longEnough(token, `${key}.verifyToken`, problems);
    if (problems.length > before || token === undefined) return undefined;
    const expected = Buffer.from(token, 'utf8');
    return { kind: 'meta', verify: (sent) => sameSecret(sent, expected), accepted: () => token };
  }
  extra(['verifyToken']);
  if (mapping.scheme === undefined)
    problems.push(`${key}: kind ${h.kind} needs the mapping's verify (the handshake is signed)`);
  if (h.kind === 'slack') {
    extra(['when', 'challenge']);
    if (mapping.scheme !== undefined && mapping.scheme !== 'slack')
      problems.push(`${key}: kind slack needs verify.scheme "slack"`);
    if (problems.length > before) return undefined;
    return {
      kind: 'slack',
      answer: (payload) =>
        payload.type === 'url_verification' ? { challenge: challengeOf(payload.challenge, 'challenge') } : undefined,
    };
  }
  if (h.when === undefined) problems.push(`${key}.when is required by kind echo`);
  if (h.challenge === undefined) problems.push(`${key}.challenge is required by kind echo`);
  let when: ((payload: unknown) => unknown) | undefined;
  let challenge: ((payload: unknown) => unknown) | undefined;
  try {
    if (h.when) when = payloadPath(h.when.path);
    if (h.challenge) challenge = payloadPath(h.challenge);
  } catch (err) {
    problems.push(`${key}: ${(err as Error).message}`);
  }
  if (problems.length > before || !when || !challenge) return undefined;
  const equals = h.when!.equals;
  const path = h.challenge!;
  return {
    kind: 'echo',
    answer: (payload) => (when(payload) === equals ? { challenge: challengeOf(challenge(payload), path) } : undefined),
  };
}

/** The value to echo: a string or number as sent; anything else is a malformed handshake. */
function challengeOf(value: unknown, path: string): string | number {
  if ((typeof value === 'string' && value !== '') || typeof value === 'number') return value;
  throw refuse.invalidPayload(`the handshake has no challenge at ${path}`);
}

/** Meta's GET: the verify token first (a wrong one counts against the address), then mode and challenge. */
export function metaChallenge(handshake: Extract<Handshake, { kind: 'meta' }>, query: string | undefined): MetaOutcome {
  const params = new URLSearchParams(query ?? '');
  const token = params.get('hub.verify_token') ?? undefined;
  if (token === undefined || !handshake.verify(token)) return { failed: 'token', presented: token };
  const challenge = params.get('hub.challenge');
  if (params.get('hub.mode') !== 'subscribe' || !challenge) return { failed: 'request' };
  return { challenge };
}
