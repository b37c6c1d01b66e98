// JSON-lines logger for the standalone gateway. The request path logs a line per request, so lines are
// built directly (only string values escaped) and written in batches: when 64 KB have gathered or
// 50 ms have passed; warnings and errors go out on the next tick.
import type { LogFields, Logger } from '../../host.ts';
import { isoNow } from '../../util/iso-now.ts';

const FLUSH_BYTES = 64 * 1024;
const FLUSH_MS = 50;

export function createLineLogger(out: NodeJS.WritableStream = process.stdout): Logger & { flush(): void } {
  let buffer = '';
  let timer: NodeJS.Timeout | undefined;
  let soon = false;
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    soon = false;
    if (buffer === '') return;
    const text = buffer;
    buffer = '';
    out.write(text);
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
    buffer += `${text}}\n`;
    if (buffer.length >= FLUSH_BYTES) flush();
    else if (urgent && !soon) {
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
