// Secrets as the config may give them: a literal, "${NAME}" read from the environment when the config
// loads, or a file holding the value (trimmed). Every problem names the key; no value is ever quoted.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/**
 * The shortest shared secret accepted (hook tokens, signing secrets): 128 bits even when written as
 * text. Shorter ones are guessable or placeholders (`whsec_A` was once a 0-byte HMAC key).
 */
export const MIN_SECRET_BYTES = 16;

/** False (with a problem naming the key) when the secret is shorter than `min` bytes. */
export function longEnough(secret: string | Buffer, key: string, problems: string[], min = MIN_SECRET_BYTES): boolean {
  const bytes = typeof secret === 'string' ? Buffer.byteLength(secret, 'utf8') : secret.length;
  if (bytes >= min) return true;
  problems.push(`${key} must be at least ${min} bytes (use a random value, e.g. \`openssl rand -hex 32\`)`);
  return false;
}

/** The value of a literal or "${NAME}"; undefined (with a problem) when the variable is unset or empty. */
export function resolveSecret(value: string, key: string, problems: string[]): string | undefined {
  const ref = ENV_REFERENCE.exec(value.trim());
  if (!ref) return value.trim() || (problems.push(`${key} must not be blank`), undefined);
  const fromEnv = process.env[ref[1]!]?.trim();
  if (!fromEnv) {
    problems.push(`${key}: environment variable ${ref[1]} is not set`);
    return undefined;
  }
  return fromEnv;
}

/** The trimmed content of a secret file, relative to the config's folder. */
export function readSecretFile(file: string, configDir: string, key: string, problems: string[]): string | undefined {
  const resolved = path.resolve(configDir, file);
  let text: string;
  try {
    text = readFileSync(resolved, 'utf8');
  } catch (err) {
    problems.push(`${key}: cannot read ${resolved} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
  const value = text.trim();
  if (!value) problems.push(`${key}: ${resolved} is empty`);
  return value || undefined;
}
