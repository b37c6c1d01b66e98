// Syncs by path, for what a log holds no handle on: a file written without a kept handle, and the
// directories whose entries changed (a new file, a rotation's rename, a directory made for a log).
import { open } from 'node:fs/promises';

/** fdatasync on the file: its data and the size that reaches it. */
export async function syncFileData(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

/** fsync on a directory: its entries (names created, renamed or removed) reach the disk. */
export async function syncDirectory(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
