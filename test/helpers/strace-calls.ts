// Reads what `strace -f -o <file>` recorded into system calls in the order they happened, so a test
// can assert that one call finished before another began (a sync before an answer's write) without
// any timing. strace writes a call cut by another thread's as "<unfinished ...>" and later
// "<... name resumed>": such a call starts at its first line and ends at its second.

export interface SystemCall {
  pid: number;
  name: string;
  /** The arguments as strace printed them (strings are C-escaped, cut at strace's -s). */
  args: string;
  /** What it returned ("0", "-1 EBADF (...)"); undefined while unfinished. */
  result: string | undefined;
  /** Line numbers of its start and of its end in the trace: the order of events. */
  start: number;
  end: number;
}

const WHOLE = /^(\d+)\s+(\w+)\((.*)\)\s+=\s+(.*)$/;
const UNFINISHED = /^(\d+)\s+(\w+)\((.*) <unfinished \.\.\.>$/;
const RESUMED = /^(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(.*)$/;

export function parseStraceCalls(text: string): SystemCall[] {
  const calls: SystemCall[] = [];
  /** Per pid, its call left unfinished (a thread is in one call at a time). */
  const open = new Map<number, SystemCall>();
  text.split('\n').forEach((line, index) => {
    let m = WHOLE.exec(line);
    if (m) {
      calls.push({ pid: Number(m[1]), name: m[2]!, args: m[3]!, result: m[4], start: index, end: index });
      return;
    }
    m = UNFINISHED.exec(line);
    if (m) {
      const call: SystemCall = {
        pid: Number(m[1]),
        name: m[2]!,
        args: m[3]!,
        result: undefined,
        start: index,
        end: -1,
      };
      open.set(call.pid, call);
      calls.push(call);
      return;
    }
    m = RESUMED.exec(line);
    if (m) {
      const call = open.get(Number(m[1]));
      if (!call || call.name !== m[2]) return;
      open.delete(call.pid);
      call.args += m[3];
      call.result = m[4];
      call.end = index;
    }
  });
  return calls;
}

/** The descriptor a call names first (write, fdatasync, close...). */
export function fdOf(call: SystemCall): number {
  return Number(/^(\d+)/.exec(call.args)?.[1] ?? -1);
}
