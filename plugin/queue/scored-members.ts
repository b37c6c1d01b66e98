// A sorted set's members with their scores as Redis answers WITHSCORES: a flat list (member, score,
// …) over RESP2, or pairs when the client reads it as RESP3 gives it. The records kept beside the
// queue (failures, run states) page by score and read either.

/** [member, score] pairs, in the order Redis gave them. */
export function withScores(reply: unknown): [string, string][] {
  if (!Array.isArray(reply)) return [];
  const pairs: [string, string][] = [];
  for (let i = 0; i < reply.length; i++) {
    const item: unknown = reply[i];
    if (Array.isArray(item)) pairs.push([String(item[0]), String(item[1])]);
    else pairs.push([String(item), String(reply[++i])]);
  }
  return pairs;
}
