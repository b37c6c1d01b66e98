// The plugin's log lines into OpenClaw's logger, which takes one string: the message, then key=value
// fields. Each answered hook request's line goes to OpenClaw's debug level: OpenClaw redacts and
// writes every line it keeps as it comes, which cost more than the request itself (docs/performance.md),
// and each request is kept in the request log (the console, `hookgate requests`, GET /api/requests).
// Warnings and errors stay as they are; an OpenClaw set to log debug shows the request lines too.
import type { LogFields, Logger } from '../../host.ts';
import type { OpenClawLogger } from './api.ts';

/** The message of the line every answered hook request gets (plugin/request/lifecycle.ts). */
export const REQUEST_LINE = 'hook request';

function line(msg: string, fields?: LogFields): string {
  if (!fields) return msg;
  const parts = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : String(v)}`);
  return parts.length ? `${msg} ${parts.join(' ')}` : msg;
}

export function lineLogger(log: OpenClawLogger): Logger {
  // Without a debug level (an older OpenClaw), request lines stay at info.
  const requests = log.debug ? log.debug.bind(log) : log.info.bind(log);
  return {
    info: (msg, fields) => {
      if (msg === REQUEST_LINE) requests(line(msg, fields));
      else log.info(line(msg, fields));
    },
    warn: (msg, fields) => log.warn(line(msg, fields)),
    error: (msg, fields) => log.error(line(msg, fields)),
  };
}
