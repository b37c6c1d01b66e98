// Writes a file so that a reader (or a crash) sees either the old content or the new one, never half:
// a temp file in the same directory, flushed to disk, then renamed over the target.
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { randomHex } from './random-hex.ts';

export interface AtomicWriteOptions {
  /** Mode of the file (default 0o600: these files hold state or secrets). */
  mode?: number;
  /** Mode of the directory when it has to be created (default 0o700). */
  dirMode?: number;
}

export async function writeFileAtomic(file: string, data: string, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: options.dirMode ?? 0o700 });
  const temp = path.join(dir, `.${path.basename(file)}.${randomHex(6)}.tmp`);
  const handle = await open(temp, 'wx', options.mode ?? 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(temp).catch(() => {});
    throw err;
  }
  await handle.close();
  try {
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
}
