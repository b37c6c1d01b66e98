// hooks.allowedSessionKeyPrefixes: prefixes are stored lower-cased, keys compared without case.

export function matchesSessionPrefix(key: string, prefixes: readonly string[] | null): boolean {
  if (prefixes === null) return true;
  const lower = key.toLowerCase();
  return prefixes.some((p) => lower.startsWith(p));
}
