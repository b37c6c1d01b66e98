// A state file a start cannot use (a directory in its place, one too large to read, one it may not
// open): the error names the file and says in words what is wrong, so the one line a failed start
// prints is enough to repair it. Node's own errors for a read through a handle name no file.
import { stat } from 'node:fs/promises';
import { errnoCode, errorMessage } from './errors.ts';

export class StateFileError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(`state file ${file} ${problem}`);
    this.name = 'StateFileError';
  }
}

/** What is wrong with a file that could not be read or written, in words. */
export function fileProblem(err: unknown): string {
  switch (errnoCode(err)) {
    case 'EISDIR':
      return 'is a directory, not a file';
    case 'ENOTDIR':
      return 'cannot be reached: a part of its path is a file, not a directory';
    case 'EEXIST':
      return 'is a file where a directory is needed';
    case 'EACCES':
    case 'EPERM':
      return 'may not be read or written by this user (permission denied)';
    case 'ELOOP':
      return 'is a loop of symbolic links';
    case 'ERR_FS_FILE_TOO_LARGE':
    case 'ERR_STRING_TOO_LONG':
      return 'is too large to read at start';
  }
  // Reading a file past the longest string V8 can make fails with a bare RangeError.
  if (err instanceof RangeError && /string length/i.test(err.message)) return 'is too large to read at start';
  return `cannot be read: ${errorMessage(err)}`;
}

/** The error for `file` that `err` (from reading or opening it) amounts to. */
export function stateFileError(file: string, err: unknown): StateFileError {
  return err instanceof StateFileError ? err : new StateFileError(file, fileProblem(err));
}

/** Throws a StateFileError when `file` exists but is not a regular file (a missing one is fine). */
export async function assertFileOrAbsent(file: string): Promise<void> {
  let found;
  try {
    found = await stat(file);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw stateFileError(file, err);
  }
  if (found.isDirectory()) throw new StateFileError(file, fileProblem({ code: 'EISDIR' }));
  if (!found.isFile()) throw new StateFileError(file, 'is not a regular file');
}
