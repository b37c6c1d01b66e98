// The digest's system event, in the contract's words: `Hook <name>: <k> events over its budget
// (<limit> per <S> s):`, then each listed text wrapped as untrusted content on its own (in the
// digest of all hooks each starts with its hook's name), then how many more were not listed.
import { wrapExternalContent } from '../safety/index.ts';
import { ALL_HOOKS } from './budget.ts';
import type { Digest } from './digests.ts';

export function digestText(digest: Digest): string {
  const k = digest.listed.length + digest.more;
  const lines = [`Hook ${digest.name}: ${k} events over its budget (${digest.limit} per ${digest.perSeconds} s):`];
  for (const item of digest.listed) {
    const wrapped = wrapExternalContent(item.text, { source: 'webhook', hookName: item.hook });
    lines.push(digest.name === ALL_HOOKS ? `${item.hook}: ${wrapped}` : wrapped);
  }
  if (digest.more > 0) lines.push(`(${digest.more} more not listed)`);
  return lines.join('\n');
}
