// What every agent tool of the plugin answers with, and what it reads the running plugin through.
import type { ToolResult } from './api.ts';
import type { RunningHookgate } from './service.ts';

export interface ToolState {
  running(): RunningHookgate | undefined;
  /** Why the plugin is not running, when it failed to start. */
  failure(): string | undefined;
}

export function answer(details: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(details) }], details };
}

export function notRunning(state: ToolState): ToolResult {
  const failure = state.failure();
  return answer({ running: false, reason: failure ? `hookgate failed to start: ${failure}` : 'hookgate is starting' });
}
