// Where the watcher posts: <base URL><hooks.path>/gmail, with the first hook token in force, under the
// body limit of the mapping that owns its payload (a user mapping for "gmail" wins over the preset).
// All of it is read from a loaded snapshot by the core's own rules (localPostOf): nothing here
// re-reads the hooks block.
import { ConfigError, type HooksSnapshot } from '../plugin/host-kit.ts';
import { localPostOf } from '../plugin/kits/config.ts';
import { GMAIL_SOURCE, type HookTarget } from './hook-poster.ts';

/** The gmail hook as `snap` takes the watcher's posts; a ConfigError names what keeps it from posting. */
export function gmailHookTarget(
  snap: HooksSnapshot,
  baseUrl: string,
  options: { root?: string; file?: string } = {},
): HookTarget {
  const root = options.root ?? 'hooks';
  const post = localPostOf(snap, 'gmail', GMAIL_SOURCE);
  const problems: string[] = [];
  if (!snap.enabled) problems.push(`${root}.enabled must be true: the Gmail watcher posts to ${post.path}`);
  if (post.token === undefined) {
    problems.push(`${root}.token (or ${root}.tokenFile) is required: the Gmail watcher posts with the hook token`);
  }
  if (post.bodyLimit === undefined) {
    problems.push(
      `${root}.presets must list "gmail" (or a mapping must own ${post.path}): the Gmail watcher posts there`,
    );
  }
  if (problems.length || post.token === undefined || post.bodyLimit === undefined) {
    throw new ConfigError(problems, options.file);
  }
  return { url: `${baseUrl.replace(/\/+$/, '')}${post.path}`, token: post.token, bodyLimit: post.bodyLimit };
}
