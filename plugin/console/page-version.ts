// The console's files under one version, so a browser keeps them for good: the version is a hash of
// every file the page may load, the files are served at <mount>v/<version>/<name> as immutable, and
// the two HTML pages (never cached) name their files there. A second visit then asks for nothing
// but the page and its data; a new package has a new version, so its pages ask for new addresses
// and no browser mixes old modules with new ones. Relative imports inside the modules stay under
// the same version by themselves.
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';

/** The folder the versioned files are served under, then the version: v/<version>/js/app.js. */
export const VERSIONED = 'v/';

/**
 * A name in an HTML page's href or src that is one of the console's own files (relative, no query).
 */
const LOCAL_FILE = /\s(href|src)="([a-z0-9][a-z0-9/.-]*\.(?:js|css|svg|png))"/g;

/** Every file under `root` the page may load, as names relative to it ("js/app.js"), sorted. */
export async function pageFileNames(root: string, pattern: RegExp): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .filter((name) => pattern.test(name))
    .sort();
}

/** The version of a set of files: 12 hex digits of a SHA-256 over their names and contents. */
export function versionOf(files: readonly { name: string; body: Buffer }[]): string {
  const hash = createHash('sha256');
  for (const { name, body } of files) hash.update(`${name}\0${body.length}\0`).update(body);
  return hash.digest('hex').slice(0, 12);
}

/**
 * An HTML page with each of its own files named under the version ("js/app.js" →
 * "v/<ver>/js/app.js").
 */
export function pointAtVersion(html: Buffer, version: string): Buffer {
  return Buffer.from(
    html.toString('utf8').replace(LOCAL_FILE, (_all, attribute: string, name: string) => {
      if (name.includes('..')) return _all;
      return ` ${attribute}="${VERSIONED}${version}/${name}"`;
    }),
  );
}
