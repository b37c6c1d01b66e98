// Verifies the OIDC token Pub/Sub push sends in `Authorization: Bearer`: an RS256 JWT signed by one
// of Google's keys, issued by accounts.google.com, for our push endpoint (aud), not expired, and, when
// hooks.gmail.pushServiceAccount is set, for that service account (email, verified). Without it any
// Google-verified email is accepted: a push only wakes the watcher, which then reads our own mailbox,
// so a stranger's push can cause a sync but never deliver content of its own.
import { verify } from 'node:crypto';
import type { GoogleCerts } from './google-certs.ts';

export interface PushJwtExpectations {
  audience: string;
  serviceAccount: string | undefined;
  /** Clock skew allowed on exp and iat. */
  skewSeconds?: number;
  now?: () => number;
}

const ISSUERS = new Set(['accounts.google.com', 'https://accounts.google.com']);

/** Why a token was refused (said to the log, never to the client). */
export class PushTokenRefused extends Error {
  override readonly name = 'PushTokenRefused';
}

export async function verifyPushJwt(
  token: string,
  certs: GoogleCerts,
  expect: PushJwtExpectations,
): Promise<Record<string, unknown>> {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) throw new PushTokenRefused('not a JWT');
  const header = decodeJson(parts[0]!, 'header');
  const claims = decodeJson(parts[1]!, 'claims');
  if (header.alg !== 'RS256') throw new PushTokenRefused('alg is not RS256');
  if (typeof header.kid !== 'string' || header.kid === '' || header.kid.length > 200)
    throw new PushTokenRefused('no key id');
  const key = await certs.key(header.kid);
  if (!key) throw new PushTokenRefused('unknown signing key');
  const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
  if (!verify('RSA-SHA256', signed, key, Buffer.from(parts[2]!, 'base64url')))
    throw new PushTokenRefused('bad signature');
  if (typeof claims.iss !== 'string' || !ISSUERS.has(claims.iss)) throw new PushTokenRefused('wrong issuer');
  const aud = claims.aud;
  if (!(aud === expect.audience || (Array.isArray(aud) && aud.includes(expect.audience))))
    throw new PushTokenRefused('wrong audience');
  const now = (expect.now ?? Date.now)() / 1000;
  const skew = expect.skewSeconds ?? 60;
  if (typeof claims.exp !== 'number' || claims.exp + skew <= now) throw new PushTokenRefused('expired');
  if (typeof claims.iat === 'number' && claims.iat - skew > now) throw new PushTokenRefused('issued in the future');
  if (claims.email_verified !== true && claims.email_verified !== 'true')
    throw new PushTokenRefused('email not verified');
  if (expect.serviceAccount !== undefined && claims.email !== expect.serviceAccount)
    throw new PushTokenRefused('wrong email');
  return claims;
}

function decodeJson(part: string, what: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new PushTokenRefused(`the ${what} is not JSON`);
}
