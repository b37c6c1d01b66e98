// One command of the `hookgate` CLI: its name, its lines in the main help, its own help and what it
// runs. The router (../index.ts) only looks commands up in a table of these.
import { asRun } from './command-name.ts';

export interface Command {
  name: string;
  /** Its lines under "Commands:" in the main help (subcommands each on their own line). */
  summary: string;
  help: string;
  /** The exit code: 0 done, 1 failed, 2 wrong usage. */
  run(args: string[]): Promise<number>;
}

/** Prints text for the user (naming the command as it is run) and returns exit code 0. */
export function print(text: string): number {
  console.log(asRun(text));
  return 0;
}
