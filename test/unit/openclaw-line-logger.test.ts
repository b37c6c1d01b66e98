// The plugin's lines in OpenClaw's logger: one string each, and each hook request's line at OpenClaw's
// debug level (its logger redacts and writes every kept line as it comes), the rest as they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineLogger } from '../../plugin/hosts/openclaw/line-logger.ts';

function openClawLog(withDebug = true) {
  const lines: [string, string][] = [];
  const at = (level: string) => (message: string) => void lines.push([level, message]);
  return {
    lines,
    log: {
      ...(withDebug ? { debug: at('debug') } : {}),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
    },
  };
}

test("a hook request's line goes to debug; other lines keep their level", () => {
  const { lines, log } = openClawLog();
  const logger = lineLogger(log);
  logger.info('hook request', { requestId: 'r1', path: '/hooks/wake', status: 200, ms: 0.4, held: undefined });
  logger.info('hookgate ready', { hooks: 2 });
  logger.warn('OpenClaw does not take system events now', { reason: 'starting up' });
  logger.error('state file unreadable');
  assert.deepEqual(lines, [
    ['debug', 'hook request requestId=r1 path=/hooks/wake status=200 ms=0.4'],
    ['info', 'hookgate ready hooks=2'],
    ['warn', 'OpenClaw does not take system events now reason="starting up"'],
    ['error', 'state file unreadable'],
  ]);
});

test('an OpenClaw logger without debug gets the request lines at info', () => {
  const { lines, log } = openClawLog(false);
  lineLogger(log).info('hook request', { status: 401 });
  assert.deepEqual(lines, [['info', 'hook request status=401']]);
});
