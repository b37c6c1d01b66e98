// JSON-lines logger for the standalone gateway. Lines are buffered and written once per tick, so a
// busy request path pays for one write per batch, not per line.
import type { LogFields, Logger } from '../../host.ts';

export function createLineLogger(out: NodeJS.WritableStream = process.stdout): Logger & { flush(): void } {
  let buffer: string[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (buffer.length === 0) return;
    const text = buffer.join('');
    buffer = [];
    out.write(text);
  };
  // The ISO timestamp is formatted at most once per millisecond.
  let lastMs = 0;
  let lastIso = '';
  const now = (): string => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastIso = new Date(ms).toISOString();
    }
    return lastIso;
  };
  const line = (level: string, msg: string, fields?: LogFields): void => {
    buffer.push(`${JSON.stringify({ t: now(), level, msg, ...fields })}\n`);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  return {
    info: (msg, fields) => line('info', msg, fields),
    warn: (msg, fields) => line('warn', msg, fields),
    error: (msg, fields) => line('error', msg, fields),
    flush,
  };
}
