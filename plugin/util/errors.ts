// How code that catches an unknown value reads it: the message, or an errno-style code.

/** The message of an Error, or the value as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The `code` of an errno-style error (ENOENT, ECONNREFUSED, …), when it has a string one. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
