// How the user runs this CLI, so help and hints name a command that works as typed: `hookgate`
// when that name on the PATH is this package's launcher (a global install), else `npx hookgate`
// (a clone, or a project that depends on hookgate; npm and npx put a `hookgate` on the PATH of
// what they run, which the user's own shell does not have).
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** bin/hookgate of this package, from plugin/… (tsx) or dist/ (built). */
function ownLauncher(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 8; up++, dir = path.dirname(dir)) {
    const launcher = realpathOrUndefined(path.join(dir, 'bin', 'hookgate'));
    if (launcher) return launcher;
  }
  return undefined;
}

function realpathOrUndefined(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
}

export function commandName(env: NodeJS.ProcessEnv = process.env): string {
  if (env.npm_command) return 'npx hookgate';
  const own = ownLauncher();
  const onPath = (env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .some((dir) => realpathOrUndefined(path.join(dir, 'hookgate')) === own);
  return own && onPath ? 'hookgate' : 'npx hookgate';
}

/** Help text as run: its `hookgate <command>` examples under the name the user types. */
export function asRun(text: string, name = commandName()): string {
  return name === 'hookgate'
    ? text
    : text.replace(
        /\bhookgate(?= (?:<command>|(?:gateway|config|requests|failures|replay|webhooks|help|--help)\b))/g,
        name,
      );
}
