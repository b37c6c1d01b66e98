// The OAuth client and refresh token of one Gmail account, kept in <stateDir>/secrets/gmail-<account>.json
// (directory 0700, file 0600, written atomically) and never in the config file.
import { chmod, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../plugin/util/write-file-atomic.ts';

export interface GmailCredentials {
  client_id: string;
  client_secret: string;
  refresh_token: string;
}

/** An account name is used in file names: an email-like string, no path separators, no leading dot. */
const ACCOUNT = /^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+$/;

export function assertAccountName(account: string): void {
  if (!ACCOUNT.test(account) || account.startsWith('.') || account.length > 254) {
    throw new Error('hooks.gmail.account must be an email address');
  }
}

export function gmailCredentialsPath(stateDir: string, account: string): string {
  assertAccountName(account);
  return path.join(stateDir, 'secrets', `gmail-${account}.json`);
}

export async function writeGmailCredentials(
  stateDir: string,
  account: string,
  credentials: GmailCredentials,
): Promise<string> {
  const file = gmailCredentialsPath(stateDir, account);
  const { client_id, client_secret, refresh_token } = credentials;
  await writeFileAtomic(file, `${JSON.stringify({ client_id, client_secret, refresh_token }, null, 2)}\n`, {
    mode: 0o600,
    dirMode: 0o700,
  });
  // mkdir's mode applies only when it creates the directory; tighten one that already existed.
  await chmod(path.dirname(file), 0o700);
  return file;
}

/** The stored credentials; a missing or malformed file is an error that says to run setup. */
export async function readGmailCredentials(stateDir: string, account: string): Promise<GmailCredentials> {
  const file = gmailCredentialsPath(stateDir, account);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`no Gmail credentials for ${account} in ${file}; run \`hookgate webhooks gmail setup\` first`, {
        cause: err,
      });
    }
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not valid JSON; run \`hookgate webhooks gmail setup\` again`);
  }
  const c = (parsed ?? {}) as Record<string, unknown>;
  for (const key of ['client_id', 'client_secret', 'refresh_token'] as const) {
    if (typeof c[key] !== 'string' || c[key] === '') {
      throw new Error(`${file} has no ${key}; run \`hookgate webhooks gmail setup\` again`);
    }
  }
  return {
    client_id: c.client_id as string,
    client_secret: c.client_secret as string,
    refresh_token: c.refresh_token as string,
  };
}
