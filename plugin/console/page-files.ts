// The page's own files, shipped in the package's console/ folder (static ES modules, no build step):
// found beside this module in the source tree and in dist/ alike, read once and kept (a few dozen
// KB), each served with its type. Only plain names under console/ are served: no dot segments, no
// hidden files, nothing outside the folder. The whole set has a version (page-version.ts): the HTML
// pages name their files under it, where a browser may keep them for good.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pageFileNames, pointAtVersion, VERSIONED, versionOf } from './page-version.ts';

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
  #version: Promise<string> | undefined;

  /**
   * The file at `name` (e.g. "app.js", "views/runs.js"), or undefined when there is none. An HTML
   * page names its files under the version.
   */
  read(name: string): Promise<PageFile | undefined> {
    if (!name.endsWith('.html')) return this.#raw(name);
    return this.#kept(`page:${name}`, async () => {
      const [file, version] = await Promise.all([this.#raw(name), this.version()]);
      return file && { type: file.type, body: pointAtVersion(file.body, version) };
    });
  }

  /**
   * The file at `v/<version>/<name>`: the file `name` when the version is the current one, else
   * undefined (an address of another package's files). Never an HTML page: those are not kept.
   */
  async readVersioned(versioned: string): Promise<PageFile | undefined> {
    const slash = versioned.indexOf('/', VERSIONED.length);
    if (!versioned.startsWith(VERSIONED) || slash < 0) return undefined;
    const name = versioned.slice(slash + 1);
    if (name.endsWith('.html') || versioned.slice(VERSIONED.length, slash) !== (await this.version())) return undefined;
    return this.#raw(name);
  }

  /** The version of the whole set of files (read once, every file). */
  version(): Promise<string> {
    this.#version ??= (async () => {
      this.#root ??= consoleRoot();
      const files = [];
      for (const name of await pageFileNames(this.#root, FILE_NAME)) {
        const file = await this.#raw(name);
        if (file !== undefined) files.push({ name, body: file.body });
      }
      return versionOf(files);
    })();
    return this.#version;
  }

  #raw(name: string): Promise<PageFile | undefined> {
    if (!FILE_NAME.test(name) || name.includes('..')) return Promise.resolve(undefined);
    return this.#kept(name, () => this.#load(name));
  }

  #kept(key: string, load: () => Promise<PageFile | undefined>): Promise<PageFile | undefined> {
    let file = this.#cache.get(key);
    if (file === undefined) {
      file = load();
      this.#cache.set(key, file);
      // Only files that exist are kept: names a stranger makes up do not grow the map.
      void file.then((found) => found ?? this.#cache.delete(key));
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
