// The page's own files, shipped in the package's console/ folder (static ES modules, no build step):
// found beside this module in the source tree and in dist/ alike, read once and kept (a few dozen
// KB), each served with its type. Only plain names under console/ are served: no dot segments, no
// hidden files, nothing outside the folder.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** A path the page may name: lower-case words, one extension of TYPES, folders allowed. */
const FILE_NAME = /^(?:[a-z0-9][a-z0-9-]*\/)*[a-z0-9][a-z0-9.-]*\.(?:html|js|css|svg|png)$/;

export interface PageFile {
  readonly type: string;
  readonly body: Buffer;
}

/** The console/ folder: two floors up from plugin/console/ in the source, one from the bundles in dist/. */
export function consoleRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '..']) {
    const root = path.resolve(here, up, 'console');
    if (existsSync(path.join(root, 'index.html'))) return root;
  }
  throw new Error(`the console's files are missing (no console/index.html above ${here})`);
}

export class PageFiles {
  readonly #cache = new Map<string, Promise<PageFile | undefined>>();
  #root: string | undefined;

  /** The file at `name` (e.g. "app.js", "views/runs.js"), or undefined when there is none. */
  read(name: string): Promise<PageFile | undefined> {
    if (!FILE_NAME.test(name) || name.includes('..')) return Promise.resolve(undefined);
    let file = this.#cache.get(name);
    if (file === undefined) {
      file = this.#load(name);
      this.#cache.set(name, file);
      // Only files that exist are kept: names a stranger makes up do not grow the map.
      void file.then((found) => found ?? this.#cache.delete(name));
    }
    return file;
  }

  async #load(name: string): Promise<PageFile | undefined> {
    this.#root ??= consoleRoot();
    const type = TYPES[path.extname(name)];
    if (type === undefined) return undefined;
    try {
      return { type, body: await readFile(path.join(this.#root, name)) };
    } catch {
      return undefined;
    }
  }
}
