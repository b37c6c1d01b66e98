// JSON-lines logger for the standalone gateway. The request path logs a line per request, so lines are
// built directly (only string values escaped), gathered in a buffer and written in batches: when
// 64 KB have gathered or 50 ms have passed; warnings and errors go out on the next tick.
//
// Writes are asynchronous (process.stdout writes synchronously to files and pipes, which stalls
// every request while the disk or the log reader is slow) and bounded: past MAX_BACKLOG bytes waiting
// to be written, lines are dropped and counted, and the count is logged once the writer catches up.
import type { LogFields, Logger } from '../../../host.ts';
import { isoNow } from './iso-now.ts';
import { writeAll } from './write-all.ts';

const FLUSH_BYTES = 64 * 1024;
const FLUSH_MS = 50;
const MAX_BACKLOG = 8 * 1024 * 1024;
/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_BYTES_PER_UNIT = 3;

/** Where the batches go: write the whole chunk, then call done. */
export interface LogSink {
  write(chunk: Buffer, done: (err?: Error | null) => void): void;
}

/** Writes to a file descriptor (1: standard output) through libuv's thread pool. */
export function fdSink(fd: number): LogSink {
  return {
    write(chunk, done) {
      writeAll(fd, chunk, done);
    },
  };
}

export interface LineLogger extends Logger {
  /** Hands what has gathered to the sink now. */
  flush(): void;
  /** Flushes and settles when everything handed over has been written. */
  close(): Promise<void>;
}

export function createLineLogger(sink: LogSink = fdSink(1)): LineLogger {
  // Lines are encoded into a buffer at once rather than joined into a string that waits for the
  // flush: a string held for 50 ms outlives several young-generation collections, each of which
  // copies it, and then it is promoted. At a line per request that cost more than building the lines.
  let chunk = Buffer.allocUnsafe(FLUSH_BYTES);
  let used = 0;
  let timer: NodeJS.Timeout | undefined;
  let soon = false;
  const backlog: Buffer[] = [];
  let backlogBytes = 0;
  let writing = false;
  let dropped = 0;
  /** The last write failed: dropped lines are not reported until one succeeds. */
  let failing = false;
  /** close() calls waiting for the backlog to be written. */
  const drained: (() => void)[] = [];

  const writeNext = (): void => {
    writing = true;
    // Report dropped lines once the writer has caught up, unless the sink itself is failing (a
    // closed pipe): then the report would fail too, over and over.
    if (backlog.length === 0 && dropped > 0 && !failing) {
      const n = dropped;
      dropped = 0;
      line('warn', 'log output fell behind; lines were dropped', { dropped: n }, false);
      flush();
    }
    const next = backlog.shift();
    if (!next) {
      writing = false;
      for (const resolve of drained.splice(0)) resolve();
      return;
    }
    sink.write(next, (err) => {
      backlogBytes -= next.length;
      failing = Boolean(err);
      if (err) dropped += countLines(next);
      writeNext();
    });
  };
  const enqueue = (data: Buffer): void => {
    if (backlogBytes + data.length > MAX_BACKLOG) {
      dropped += countLines(data);
      return;
    }
    backlog.push(data);
    backlogBytes += data.length;
    if (!writing) writeNext();
  };
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    soon = false;
    if (used === 0) return;
    // The sink holds on to what it is given, so the next lines go into a fresh buffer.
    const full = chunk.subarray(0, used);
    chunk = Buffer.allocUnsafe(FLUSH_BYTES);
    used = 0;
    enqueue(full);
  };
  const append = (text: string): void => {
    if (used + text.length * MAX_BYTES_PER_UNIT > FLUSH_BYTES) {
      flush();
      // A line too long for a whole chunk goes out on its own.
      if (text.length * MAX_BYTES_PER_UNIT > FLUSH_BYTES) {
        enqueue(Buffer.from(text));
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
    close() {
      flush();
      if (!writing) return Promise.resolve();
      return new Promise((resolve) => drained.push(resolve));
    },
  };
}

function countLines(data: Buffer): number {
  let n = 0;
  for (let at = data.indexOf(0x0a); at !== -1; at = data.indexOf(0x0a, at + 1)) n++;
  return n;
}
