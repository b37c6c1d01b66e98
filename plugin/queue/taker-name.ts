// The name an assistant takes under in the queue's consumer group. Kept in the state dir so that a
// restarted assistant is the same taker: it finds the entries it held and had not confirmed, and
// its own record says which of them it already carried out. Without a state dir, a name per process.
import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { randomHex } from '../util/random-hex.ts';

const FILE = 'queue-taker';

export async function takerName(stateDir: string | undefined): Promise<string> {
  const fresh = `${hostname()}-${randomHex(6)}`;
  if (!stateDir) return fresh;
  const file = path.join(stateDir, FILE);
  try {
    const kept = (await readFile(file, 'utf8')).trim();
    if (kept) return kept;
  } catch {
    // None yet: written below.
  }
  await writeFile(file, `${fresh}\n`, { mode: 0o600 });
  return fresh;
}
