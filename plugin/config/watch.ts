// Watches the config file and the transforms tree. Bursts of events (editors' atomic saves, mv over
// the file, a checkout touching many transforms) are debounced into one callback.
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from '../host.ts';
import { errorMessage } from '../util/errors.ts';

export interface WatchChange {
  config: boolean;
  /** Transform files that changed, relative to the transforms root. */
  transforms: string[];
}

export interface ConfigWatcher {
  /** Resolves once the initial scan is done and changes are being reported. */
  ready: Promise<void>;
  close(): Promise<void>;
}

export function watchConfig(opts: {
  configPath: string;
  transformsRoot: string;
  debounceMs?: number;
  maxWaitMs?: number;
  logger: Logger;
  onChange(change: WatchChange): void;
}): ConfigWatcher {
  const configPath = path.resolve(opts.configPath);
  const configDir = path.dirname(configPath);
  const root = path.resolve(opts.transformsRoot);
  // Directories on the way from the config dir down to the transforms root.
  const way = new Set<string>();
  for (let d = root; d.startsWith(configDir) && d !== path.dirname(d); d = path.dirname(d)) way.add(d);
  way.add(configDir);
  const under = (p: string, dir: string): boolean => p === dir || p.startsWith(dir + path.sep);
  const outsideConfigDir = !under(root, configDir);

  // Only the config file, the folders leading to the transforms root, and everything below it.
  const ignored = (p: string): boolean => !(p === configPath || way.has(p) || under(p, root));
  const watcher: FSWatcher = watch(outsideConfigDir ? [configDir, root] : [configDir], {
    ignoreInitial: true,
    ignored,
    atomic: true,
  });

  let pending: WatchChange = { config: false, transforms: [] };
  let timer: NodeJS.Timeout | undefined;
  // Continuous changes still give a reload at least this often.
  const maxWaitMs = opts.maxWaitMs ?? 1000;
  let firstAt = 0;
  watcher.on('all', (_event, p) => {
    const abs = path.resolve(p);
    if (abs === configPath) pending.config = true;
    else if (under(abs, root) && abs !== root) {
      const rel = path.relative(root, abs);
      if (!pending.transforms.includes(rel)) pending.transforms.push(rel);
    } else return;
    const now = Date.now();
    if (timer === undefined) firstAt = now;
    clearTimeout(timer);
    const wait = Math.max(0, Math.min(opts.debounceMs ?? 200, firstAt + maxWaitMs - now));
    timer = setTimeout(() => {
      timer = undefined;
      const change = pending;
      pending = { config: false, transforms: [] };
      opts.onChange(change);
    }, wait);
  });
  watcher.on('error', (err) => opts.logger.warn('config watcher error', { reason: errorMessage(err) }));
  const ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));

  return {
    ready,
    async close() {
      clearTimeout(timer);
      await watcher.close();
    },
  };
}
