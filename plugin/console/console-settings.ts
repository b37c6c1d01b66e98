// hooks.console as the console reads it: whether it is served, and how long a login lasts.

export interface ConsoleSettings {
  /** hooks.console.enabled (default true): false answers 404 under the console's path. */
  readonly enabled: boolean;
  /** hooks.console.sessionHours (default 12): a session ends this long after its login. */
  readonly sessionHours: number;
}
