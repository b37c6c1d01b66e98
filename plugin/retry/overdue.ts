// Retries found overdue at a start (the process was down when they fell due) go out with the pacing
// they would have had: in the order they were due, each after the one before by the time that
// separated their due times, never more than `maxGapMs` (hooks.retry.initialDelaySeconds, the
// shortest wait the policy gives). Started all at once they would hit a provider or a platform in
// one burst, however spread out their failures had been.

/** The time each item is scheduled at: overdue ones (due by `from`) spread from `from`, the rest as due. */
export function spreadOverdue<T>(
  items: readonly { item: T; dueAt: number }[],
  from: number,
  maxGapMs: number,
): { item: T; at: number }[] {
  // An unreadable time (NaN) counts as long overdue: it goes first.
  const overdue = items
    .filter((i) => !(i.dueAt > from))
    .map((i) => ({ item: i.item, dueAt: i.dueAt || 0 }))
    .sort((a, b) => a.dueAt - b.dueAt);
  const out: { item: T; at: number }[] = [];
  let at = from;
  let previous: number | undefined;
  for (const { item, dueAt } of overdue) {
    if (previous !== undefined) at += Math.min(dueAt - previous, maxGapMs);
    previous = dueAt;
    out.push({ item, at });
  }
  for (const i of items) if (i.dueAt > from) out.push({ item: i.item, at: i.dueAt });
  return out;
}
