// A mapping's `verify` block -> its verifier, with every problem named by key: a missing or unreadable
// secret, an unset environment variable, a secret too short for its scheme, a secret equal to the
// gateway token, keys that do not belong to the scheme.
import { longEnough, readSecretFile, resolveSecret } from '../settings/secret-values.ts';
import { createVerifier, type HmacSettings } from './schemes.ts';
import type { Scheme, Verifier } from './verifier.ts';

/** As written in the config (the mapping schema has already checked the types and the scheme). */
export interface VerifyConfig extends HmacSettings {
  scheme: Scheme;
  secret?: string;
  secrets?: string[];
  secretFile?: string;
  toleranceSeconds?: number;
  username?: string;
}

const DEFAULT_TOLERANCE_SECONDS = 300;
/** Linear documents a one-minute window for its signed timestamp. */
const LINEAR_TOLERANCE_SECONDS = 60;
const HMAC_ONLY = ['header', 'algorithm', 'encoding', 'prefix', 'timestampHeader'] as const;
const WHSEC = 'whsec_';
/** The Standard Webhooks spec: keys of 24 to 64 random bytes. */
const STANDARD_WEBHOOKS_MIN_BYTES = 24;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export interface VerifierContext {
  configDir: string;
  gatewayToken: string | undefined;
}

export function compileVerifier(
  v: VerifyConfig,
  key: string,
  ctx: VerifierContext,
  problems: string[],
): Verifier | undefined {
  const before = problems.length;
  const given = [v.secret, v.secrets, v.secretFile].filter((x) => x !== undefined).length;
  if (given !== 1) problems.push(`${key} needs exactly one of secret, secrets or secretFile`);
  if (v.scheme === 'basic' && !v.username) problems.push(`${key}.username is required by the basic scheme`);
  if (v.scheme !== 'basic' && v.username !== undefined)
    problems.push(`${key}.username belongs to the basic scheme only`);
  if (v.scheme === 'hmac' && !v.header) problems.push(`${key}.header is required by the hmac scheme`);
  for (const k of HMAC_ONLY) {
    if (v.scheme !== 'hmac' && v[k] !== undefined) problems.push(`${key}.${k} belongs to the hmac scheme only`);
  }

  const secrets: Secret[] = [];
  if (v.secret !== undefined)
    pushResolved(secrets, resolveSecret(v.secret, `${key}.secret`, problems), `${key}.secret`);
  v.secrets?.forEach((s, i) => {
    const where = `${key}.secrets[${i}]`;
    pushResolved(secrets, resolveSecret(s, where, problems), where);
  });
  if (v.secretFile !== undefined) {
    const where = `${key}.secretFile`;
    pushResolved(secrets, readSecretFile(v.secretFile, ctx.configDir, where, problems), where);
  }
  const gateway = ctx.gatewayToken?.trim();
  if (gateway && secrets.some((s) => s.value === gateway))
    problems.push(`${key}: a secret must differ from gateway.auth.token`);

  const keys = secrets.map((s) => keyBytes(v.scheme, s, problems));
  if (problems.length > before) return undefined;
  return createVerifier(v.scheme, {
    keys: keys as Buffer[],
    toleranceSeconds:
      v.toleranceSeconds ?? (v.scheme === 'linear' ? LINEAR_TOLERANCE_SECONDS : DEFAULT_TOLERANCE_SECONDS),
    username: v.username,
    header: v.header,
    algorithm: v.algorithm,
    encoding: v.encoding,
    prefix: v.prefix,
    timestampHeader: v.timestampHeader,
  });
}

/** A secret as resolved, and the key it came from. */
interface Secret {
  value: string;
  where: string;
}

function pushResolved(into: Secret[], value: string | undefined, where: string): void {
  if (value !== undefined) into.push({ value, where });
}

/**
 * The key bytes, long enough for the scheme. Standard Webhooks keys are the base64 after "whsec_",
 * 24 bytes at least (the standard's minimum). Every other scheme uses the secret's bytes, at least
 * MIN_SECRET_BYTES of them; Stripe's own "whsec_" does not count towards them.
 */
function keyBytes(scheme: Scheme, { value, where }: Secret, problems: string[]): Buffer | undefined {
  const unprefixed = value.startsWith(WHSEC) ? value.slice(WHSEC.length) : value;
  if (scheme === 'standard-webhooks') {
    if (!BASE64.test(unprefixed)) {
      problems.push(`${where}: a Standard Webhooks secret is "whsec_" followed by base64`);
      return undefined;
    }
    const key = Buffer.from(unprefixed, 'base64');
    return longEnough(key, `${where} (after "whsec_", base64-decoded)`, problems, STANDARD_WEBHOOKS_MIN_BYTES)
      ? key
      : undefined;
  }
  const counted = scheme === 'stripe' ? unprefixed : value;
  if (!longEnough(counted, scheme === 'stripe' ? `${where} (after "whsec_")` : where, problems)) return undefined;
  return Buffer.from(value, 'utf8');
}
