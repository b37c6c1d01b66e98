// Which of a store's keys to keep when it holds more than maxKeys, shared fairly between scopes as
// the keys in memory are (dedupe-keys.ts): every scope keeps its newest keys, up to an equal level
// set so that the scopes needing less leave their room to the others. For a host's durable store
// (the OpenClaw host's journal) when it is compacted.

/** The records kept, in their order (oldest first); all of them when there are at most maxKeys. */
export function keepFairly<T extends { scope: string }>(records: readonly T[], maxKeys: number): T[] {
  if (records.length <= maxKeys) return [...records];
  const counts = new Map<string, number>();
  for (const r of records) counts.set(r.scope, (counts.get(r.scope) ?? 0) + 1);
  // The level: scopes below an equal share of the room left keep all theirs, the rest that share.
  const sizes = [...counts.values()].sort((a, b) => a - b);
  let room = maxKeys;
  let level = 0;
  for (let i = 0; i < sizes.length; i++) {
    level = Math.floor(room / (sizes.length - i));
    if (sizes[i]! > level) break;
    room -= sizes[i]!;
  }
  const left = new Map<string, number>();
  for (const [scope, count] of counts) left.set(scope, Math.min(count, level));
  const kept: T[] = [];
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    const n = left.get(r.scope)!;
    if (n === 0) continue;
    left.set(r.scope, n - 1);
    kept.push(r);
  }
  return kept.reverse();
}
