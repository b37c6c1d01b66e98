// The plugin's id, where its settings sit in OpenClaw's config and the path its route is mounted on:
// all the entry needs before the plugin starts, with nothing of the core (see index.ts).

export const PLUGIN_ID = 'hookgate';
export const HOOKS_KEY = `plugins.entries.${PLUGIN_ID}.config`;

/** The prefix the route is mounted on: plugins.entries.hookgate.config.path, else /hooks. */
export function routePath(pluginConfig: Record<string, unknown> | undefined): string {
  const raw = typeof pluginConfig?.path === 'string' ? pluginConfig.path.trim().replace(/\/+$/, '') : '';
  return raw ? `/${raw.replace(/^\/+/, '')}` : '/hooks';
}

/** Where the admin API answers in OpenClaw (the paths of the standalone's /api/, behind the gateway token). */
export const ADMIN_PATH = '/hookgate/api';

/** Where the console (the owner's web page) answers in OpenClaw, logged in with OpenClaw's gateway token. */
export const CONSOLE_PATH = '/hookgate/ui';
