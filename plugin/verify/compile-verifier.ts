// A mapping's `verify` block -> its verifier, with every problem named by key: a missing or unreadable
// secret, an unset environment variable, a secret equal to the gateway token, keys that do not belong
// to the scheme.
import { readSecretFile, resolveSecret } from '../config/secret-values.ts';
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
const STANDARD_WEBHOOKS_PREFIX = 'whsec_';
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

  const secrets: string[] = [];
  if (v.secret !== undefined) pushResolved(secrets, resolveSecret(v.secret, `${key}.secret`, problems));
  v.secrets?.forEach((s, i) => pushResolved(secrets, resolveSecret(s, `${key}.secrets[${i}]`, problems)));
  if (v.secretFile !== undefined)
    pushResolved(secrets, readSecretFile(v.secretFile, ctx.configDir, `${key}.secretFile`, problems));
  const gateway = ctx.gatewayToken?.trim();
  if (gateway && secrets.includes(gateway)) problems.push(`${key}: a secret must differ from gateway.auth.token`);

  const keys = secrets.map((s, i) => keyBytes(v.scheme, s, `${key} (secret ${i + 1})`, problems));
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

function pushResolved(into: string[], value: string | undefined): void {
  if (value !== undefined) into.push(value);
}

/** Standard Webhooks keys are the base64 after "whsec_"; every other scheme uses the secret's bytes. */
function keyBytes(scheme: Scheme, secret: string, where: string, problems: string[]): Buffer | undefined {
  if (scheme !== 'standard-webhooks') return Buffer.from(secret, 'utf8');
  const b64 = secret.startsWith(STANDARD_WEBHOOKS_PREFIX) ? secret.slice(STANDARD_WEBHOOKS_PREFIX.length) : secret;
  if (!BASE64.test(b64)) {
    problems.push(`${where}: a Standard Webhooks secret is "whsec_" followed by base64`);
    return undefined;
  }
  return Buffer.from(b64, 'base64');
}
