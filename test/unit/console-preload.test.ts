// The console's first view waits on no chain of module fetches: index.html names every module the
// page imports in a <link rel="modulepreload">, so the browser asks for them all while it parses
// the page, instead of finding each import only when the module naming it has arrived. The list is
// written by hand in the page (the files ship as they are); this test walks the module graph from
// the page's entry and keeps the list complete, and free of modules the page no longer imports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from '../helpers/spawn-gateway.ts';

const CONSOLE = path.join(ROOT, 'console');

/** Attribute values of the tags in `html` that match `tag` (e.g. link rel=modulepreload href). */
function attributes(html: string, tag: RegExp, attribute: string): string[] {
  const found: string[] = [];
  for (const [element] of html.matchAll(tag)) {
    const value = new RegExp(`\\s${attribute}="([^"]+)"`).exec(element)?.[1];
    if (value !== undefined) found.push(value);
  }
  return found;
}

/**
 * Every module reachable from `entries` (paths under console/) through static and dynamic imports.
 */
async function moduleGraph(entries: string[]): Promise<Set<string>> {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const source = await readFile(path.join(CONSOLE, name), 'utf8');
    const specifiers = [
      ...source.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gms),
      ...source.matchAll(/^\s*import\s+'([^']+)'/gm),
      ...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
    ].map((m) => m[1]!);
    for (const specifier of specifiers) {
      assert.match(specifier, /^\.\.?\//, `${name} imports ${specifier}: the console imports only its own files`);
      queue.push(path.posix.normalize(path.posix.join(path.posix.dirname(name), specifier)));
    }
  }
  return seen;
}

test('index.html preloads every module the page imports, and none it does not', async () => {
  const html = await readFile(path.join(CONSOLE, 'index.html'), 'utf8');
  const entries = attributes(html, /<script\b[^>]*\btype="module"[^>]*>/g, 'src');
  assert.deepEqual(entries, ['js/app.js'], 'the page has one entry module');
  const graph = await moduleGraph(entries);
  assert.ok(graph.size > 5, `the graph was walked (${[...graph].join(', ')})`);
  const preloaded = attributes(html, /<link\b[^>]*\brel="modulepreload"[^>]*>/g, 'href');
  assert.equal(new Set(preloaded).size, preloaded.length, 'each module is preloaded once');
  assert.deepEqual(
    [...graph].filter((name) => !preloaded.includes(name)),
    [],
    'modules imported but not preloaded: add a <link rel="modulepreload"> for each to console/index.html',
  );
  assert.deepEqual(
    preloaded.filter((name) => !graph.has(name)),
    [],
    'modules preloaded but imported by nothing: drop their links',
  );
});

test('login.html loads one module that imports nothing (nothing to preload)', async () => {
  const html = await readFile(path.join(CONSOLE, 'login.html'), 'utf8');
  const entries = attributes(html, /<script\b[^>]*\btype="module"[^>]*>/g, 'src');
  assert.deepEqual([...(await moduleGraph(entries))], entries);
});
