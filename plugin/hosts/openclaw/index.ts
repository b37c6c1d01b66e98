// The OpenClaw plugin entry. register() only declares: the route, the metrics route, the agent tools,
// the service and the reload policy. OpenClaw loads this entry again for every config change it
// evaluates and retires those loads at once, so it imports nothing of the core: a load still busy
// with the core's modules when retired was OpenClaw's "forced retirement ... still-running call".
// The service's start loads the running plugin (service.ts).
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { definePluginEntry } from 'openclaw/plugin-sdk/plugin-entry';
import type { OpenClawPluginApi } from './api.ts';
import { ADMIN_PATH, CONSOLE_PATH, HOOKS_KEY, PLUGIN_ID, routePath } from './identity.ts';
import type { RunningHookgate } from './service.ts';
import { registerTools } from './tools.ts';

/** Where the plugin's Prometheus metrics answer in OpenClaw. */
const METRICS_PATH = '/hookgate/metrics';
/** How long start() waits for the plugin before returning (it goes on starting). */
const START_WAIT_MS = 3_000;

type ServiceModule = typeof import('./service.ts');

function register(api: OpenClawPluginApi): void {
  let running: RunningHookgate | undefined;
  let failure: string | undefined;
  let loading: Promise<ServiceModule> | undefined;
  const load = (): Promise<ServiceModule> => (loading ??= import('./service.ts'));

  const route =
    (answer: (r: RunningHookgate, req: IncomingMessage, res: ServerResponse) => Promise<boolean>) =>
    async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
      const current = running;
      if (current) return answer(current, req, res);
      return (await load()).answerUnavailable(res, failure);
    };

  api.registerHttpRoute({
    path: routePath(api.pluginConfig),
    auth: 'plugin',
    match: 'prefix',
    handler: route((r, req, res) => r.handle(req, res)),
  });
  // The plugin's metrics, behind OpenClaw's own gateway auth.
  api.registerHttpRoute({
    path: METRICS_PATH,
    auth: 'gateway',
    match: 'exact',
    handler: route((r, req, res) => r.metrics(req, res)),
  });
  // The admin API (failures, replay, pause, runs, requests), behind OpenClaw's own gateway auth.
  api.registerHttpRoute({
    path: ADMIN_PATH,
    auth: 'gateway',
    match: 'prefix',
    handler: route((r, req, res) => r.adminHttp(req, res)),
  });
  // The console: its own login (OpenClaw's gateway token, through a form and a session cookie), so
  // OpenClaw's auth is not asked; its data calls are the admin API's.
  api.registerHttpRoute({
    path: CONSOLE_PATH,
    auth: 'plugin',
    match: 'prefix',
    handler: route((r, req, res) => r.console(req, res)),
  });
  registerTools(api, { running: () => running, failure: () => failure });

  // The plugin starts in the background: OpenClaw gives a replacement service START_WAIT_MS + 2 s to
  // start and drops the replacement (hooks answer 404) when that passes; loading the core can take
  // longer on a busy host. Hooks answer 503 with Retry-After until it is up.
  let booting: Promise<RunningHookgate> | undefined;
  api.registerService({
    id: PLUGIN_ID,
    async start(ctx) {
      // Work queued from the route runs in this context, which carries the service's authority.
      const context = AsyncLocalStorage.snapshot();
      failure = undefined;
      const boot = load().then(({ startHookgate }) => startHookgate(api, ctx, context));
      booting = boot;
      const outcome = boot.then(
        (started) => {
          if (booting === boot) running = started;
          return undefined;
        },
        (err: unknown) => {
          const error = err instanceof Error ? err : new Error(String(err));
          if (booting === boot) failure = error.message;
          return error;
        },
      );
      let timer: NodeJS.Timeout | undefined;
      const first = await Promise.race([
        outcome,
        new Promise<'starting'>((resolve) => (timer = setTimeout(resolve, START_WAIT_MS, 'starting'))),
      ]);
      clearTimeout(timer);
      // A failure in time is OpenClaw's to report as the service's; a later one the plugin logs.
      if (first === 'starting')
        void outcome.then((error) => error && api.logger.error(`hookgate could not start: ${error.message}`));
      else if (first) throw first;
    },
    async stop() {
      const current = running;
      const boot = booting;
      booting = undefined;
      running = undefined;
      if (current) return current.stop();
      // Still starting: it is stopped once up, without holding OpenClaw's stop past its budget.
      void boot?.then((started) => started.stop()).catch(() => {});
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
