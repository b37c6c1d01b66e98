// One command of the `hookgate` CLI: its own help and what it runs. The router (../index.ts) keeps a
// table of entries (name, lines in the main help) and loads a command's module only when it is run,
// so `--help` or `config get` does not wait for the whole gateway's modules.
import { asRun } from './command-name.ts';

export interface Command {
  help: string;
  /** The exit code: 0 done, 1 failed, 2 wrong usage. */
  run(args: string[]): Promise<number>;
}

export interface CommandEntry {
  name: string;
  /** Its lines under "Commands:" in the main help (subcommands each on their own line). */
  summary: string;
  /** The command, its module loaded on first use. */
  load(): Promise<Command>;
}

/** Prints text for the user (naming the command as it is run) and returns exit code 0. */
export function print(text: string): number {
  console.log(asRun(text));
  return 0;
}
