// JSON-lines logger for the standalone gateway. The request path logs a line per request, so lines are
// built directly (only string values escaped) and written in batches: when 64 KB have gathered or
// 50 ms have passed; warnings and errors go out on the next tick.
import type { LogFields, Logger } from '../../host.ts';
import { isoNow } from '../../util/iso-now.ts';

const FLUSH_BYTES = 64 * 1024;
const FLUSH_MS = 50;
/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_BYTES_PER_UNIT = 3;

export function createLineLogger(out: NodeJS.WritableStream = process.stdout): Logger & { flush(): void } {
  // Lines are encoded into a buffer at once rather than joined into a string that waits for the
  // flush: a string held for 50 ms outlives several young-generation collections, each of which
  // copies it, and then it is promoted. At a line per request that cost more than building the lines.
  let chunk = Buffer.allocUnsafe(FLUSH_BYTES);
  let used = 0;
  let timer: NodeJS.Timeout | undefined;
  let soon = false;
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    soon = false;
    if (used === 0) return;
    // The stream may hold on to what it is given, so the next lines go into a fresh buffer.
    const full = chunk.subarray(0, used);
    chunk = Buffer.allocUnsafe(FLUSH_BYTES);
    used = 0;
    out.write(full);
  };
  const append = (text: string): void => {
    if (used + text.length * MAX_BYTES_PER_UNIT > FLUSH_BYTES) {
      flush();
      // A line too long for a whole chunk goes out on its own.
      if (text.length * MAX_BYTES_PER_UNIT > FLUSH_BYTES) {
        out.write(text);
        return;
      }
    }
    used += chunk.write(text, used);
  };
  const line = (level: string, msg: string, fields: LogFields | undefined, urgent: boolean): void => {
    let text = `{"t":"${isoNow()}","level":"${level}","msg":${JSON.stringify(msg)}`;
    if (fields) {
      for (const key in fields) {
        const v = fields[key];
        if (v === undefined) continue;
        // Keys are ours; values may come from clients (a path, an address) and are escaped.
        text += `,"${key}":${typeof v === 'string' ? JSON.stringify(v) : typeof v === 'number' && !Number.isFinite(v) ? 'null' : v}`;
      }
    }
    append(`${text}}\n`);
    if (urgent && !soon) {
      soon = true;
      setImmediate(flush);
    } else if (timer === undefined) {
      timer = setTimeout(flush, FLUSH_MS);
      timer.unref();
    }
  };
  return {
    info: (msg, fields) => line('info', msg, fields, false),
    warn: (msg, fields) => line('warn', msg, fields, true),
    error: (msg, fields) => line('error', msg, fields, true),
    flush,
  };
}
