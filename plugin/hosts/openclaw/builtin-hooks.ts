// OpenClaw's own webhook receiver (its top-level `hooks` block) answers before plugin routes on the
// paths it owns, so with both on the same path hookgate would silently receive nothing there.

type Rec = Record<string, unknown>;

function rec(v: unknown): Rec | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : undefined;
}

/** OpenClaw's path normalisation for hooks.path: leading slash, no trailing ones, default /hooks. */
function builtInPath(raw: unknown): string {
  const text = typeof raw === 'string' ? raw.trim() : '';
  const withSlash = !text ? '/hooks' : text.startsWith('/') ? text : `/${text}`;
  return withSlash.length > 1 ? withSlash.replace(/\/+$/, '') : withSlash;
}

const within = (inner: string, outer: string): boolean => inner === outer || inner.startsWith(`${outer}/`);

/**
 * The warning to log when OpenClaw's built-in hooks are enabled on a path that overlaps the plugin's
 * (the same path, or one inside the other), else undefined.
 */
export function builtInHooksWarning(gatewayConfig: unknown, pluginPath: string): string | undefined {
  const hooks = rec(rec(gatewayConfig)?.hooks);
  if (hooks?.enabled !== true) return undefined;
  const theirs = builtInPath(hooks.path);
  if (!within(theirs, pluginPath) && !within(pluginPath, theirs)) return undefined;
  return (
    `OpenClaw's built-in hooks are enabled on ${theirs}, which overlaps hookgate's ${pluginPath}: ` +
    'they take those requests first. Run `hookgate openclaw import` to move their settings into hookgate ' +
    'and turn them off, or set hooks.enabled: false'
  );
}
