// The OpenClaw plugin entry. register() only declares: the route, the service and the reload policy.
// The service reads the config, starts the core (with its own file watcher) and drains agent runs.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { definePluginEntry } from 'openclaw/plugin-sdk/plugin-entry';
import { resolveConfigPath } from 'openclaw/plugin-sdk/state-paths';
import { createHooksPlugin, refuse, writeError, type HooksPlugin } from '../../host-kit.ts';
import type { OpenClawPluginApi } from './api.ts';
import { HOOKS_KEY, PLUGIN_ID, routePath } from './config.ts';
import { createOpenClawHost } from './host.ts';
import { ServiceQueue } from './run-queue.ts';
import { IdempotencyJournal } from './idempotency-journal.ts';
import { builtInHooksWarning } from './builtin-hooks.ts';

/** Where the plugin's Prometheus metrics answer in OpenClaw. */
const METRICS_PATH = '/hookgate/metrics';
/** Runs still going at stop get this long before they are interrupted. */
const STOP_GRACE_MS = 5_000;

function register(api: OpenClawPluginApi): void {
  const queue = new ServiceQueue();
  const journal = new IdempotencyJournal();
  const configPath = resolveConfigPath(process.env);
  const host = createOpenClawHost({ api, configPath, queue, journal });
  let plugin: HooksPlugin | undefined;
  let failure: string | undefined;

  const unavailable = (res: ServerResponse): Promise<true> => {
    writeError(
      res,
      failure
        ? refuse.overloaded(`hooks unavailable: ${failure}`, { 'retry-after': '30' })
        : refuse.overloaded('hooks are starting', { 'retry-after': '1' }),
    );
    return Promise.resolve(true);
  };

  api.registerHttpRoute({
    path: routePath(api.pluginConfig),
    auth: 'plugin',
    match: 'prefix',
    handler: (req: IncomingMessage, res: ServerResponse) => (plugin ? plugin.handle(req, res) : unavailable(res)),
  });

  // The plugin's metrics, behind OpenClaw's own gateway auth.
  api.registerHttpRoute({
    path: METRICS_PATH,
    auth: 'gateway',
    match: 'exact',
    handler: async (req: IncomingMessage, res: ServerResponse) => {
      if (!plugin) return unavailable(res);
      if (req.method !== 'GET') {
        writeError(res, refuse.methodNotAllowed('GET', 'metrics are read with GET'));
        return true;
      }
      const { contentType, text } = await plugin.metrics.exposition();
      res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
      res.end(text);
      return true;
    },
  });

  api.registerService({
    id: PLUGIN_ID,
    async start(ctx) {
      // Everything queued from the route runs in this context, which carries the service's authority.
      queue.attach(AsyncLocalStorage.snapshot());
      const clash = builtInHooksWarning(api.config, routePath(api.pluginConfig));
      if (clash) host.logger.warn(clash);
      try {
        await journal.open(ctx.stateDir);
        const started = await createHooksPlugin(host, { watch: true });
        await started.watching();
        plugin = started;
        failure = undefined;
        host.logger.info('hookgate ready', { path: started.snapshot().path, enabled: started.snapshot().enabled });
      } catch (err) {
        failure = err instanceof Error ? err.message : String(err);
        throw err;
      }
    },
    async stop() {
      const closing = plugin;
      plugin = undefined;
      try {
        await closing?.close(STOP_GRACE_MS);
      } finally {
        queue.detach();
        queue.clear('the hookgate service stopped');
      }
    },
  });
}

export default definePluginEntry({
  id: PLUGIN_ID,
  name: 'hookgate',
  description: 'Webhook ingress: authenticated wake, agent and mapped hooks.',
  // The plugin follows its own config block (file watcher); moving the route needs a gateway restart.
  reload: {
    noopPrefixes: [HOOKS_KEY],
    restartPrefixes: [`${HOOKS_KEY}.path`],
  },
  register,
});
