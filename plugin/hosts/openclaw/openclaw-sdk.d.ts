// The OpenClaw SDK entry points the plugin imports. OpenClaw resolves these specifiers
// itself when it loads a plugin; the project never installs openclaw, so tsc reads these instead.
declare module 'openclaw/plugin-sdk/plugin-entry' {
  /** Returns the entry OpenClaw loads; the options are typed by the caller (see api.ts). */
  export function definePluginEntry<T extends { id: string; name: string; register(api: never): void }>(options: T): T;
}

declare module 'openclaw/plugin-sdk/state-paths' {
  /** The gateway's config file: $OPENCLAW_CONFIG_PATH, else <state dir>/openclaw.json. */
  export function resolveConfigPath(env?: NodeJS.ProcessEnv): string;
}

declare module 'openclaw/plugin-sdk/infra-runtime' {
  /** The system events OpenClaw holds for a session, oldest first (its in-memory queue, unchanged). */
  export function peekSystemEventEntries(sessionKey: string): { id: string; text: string; ts: number }[];
  /** Queues a system event for a session; false when dropped (equal to the one before it, or empty). */
  export function enqueueSystemEvent(text: string, options: { sessionKey: string }): boolean;
}
