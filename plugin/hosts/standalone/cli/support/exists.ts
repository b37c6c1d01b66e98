// Whether a file is there (a config to leave alone, or to write).
import { access } from 'node:fs/promises';

export async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
