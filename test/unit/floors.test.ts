// The core's floors (floors.js at the repository root; docs/reference/architecture.md, Layout): every
// room of plugin/ (a folder or a top-level file; hosts/ aside) stands on exactly one floor, every room
// listed exists, the doc lists the same floors, and no room imports a room on its own floor or above.
// Lint (eslint.config.js) refuses such imports too, but does not see `import('…').T` in a type position;
// the graph here reads every import form: `import`, `import type`, `export … from`, `import('…')`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const PLUGIN = path.join(ROOT, 'plugin');

// floors.js is plain JavaScript (eslint.config.js reads it too): loaded untyped, its shape checked below.
const { FLOORS } = (await import(pathToFileURL(path.join(ROOT, 'floors.js')).href)) as {
  FLOORS: readonly (readonly string[])[];
};

/** Each room's floor, counted from 1. */
const floorOf = new Map(FLOORS.flatMap((rooms, i) => rooms.map((room): [string, number] => [room, i + 1])));

/** The rooms of plugin/ as they are: folders with their slash, top-level files as they are named. */
function roomsOnDisk(): string[] {
  return readdirSync(PLUGIN, { withFileTypes: true })
    .filter((e) => e.name !== 'hosts')
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name));
}

test('floors.js lists floors of room names', () => {
  assert.ok(Array.isArray(FLOORS) && FLOORS.length > 0, 'FLOORS is not a list of floors');
  for (const [i, rooms] of FLOORS.entries()) {
    assert.ok(Array.isArray(rooms) && rooms.length > 0, `floor ${i + 1} is not a non-empty list`);
    for (const room of rooms) assert.match(room, /^[a-z][a-z-]*(\/|\.ts)$/, `floor ${i + 1}: ${String(room)}`);
  }
});

test('every room of plugin/ (hosts/ aside) stands on exactly one floor, and every room listed exists', () => {
  const listed = FLOORS.flat();
  const twice = listed.filter((room, i) => listed.indexOf(room) !== i);
  assert.deepEqual(twice, [], 'rooms on more than one floor');
  const onDisk = roomsOnDisk();
  const unplaced = onDisk.filter((room) => !floorOf.has(room));
  assert.deepEqual(unplaced, [], 'rooms of plugin/ on no floor (add them to floors.js and the architecture doc)');
  const absent = listed.filter((room) => !onDisk.includes(room));
  assert.deepEqual(absent, [], 'rooms floors.js lists that plugin/ does not have');
});

/**
 * The floors the Layout section of docs/reference/architecture.md draws, in its code block: a line
 * `  floor <n> …` (two spaces in) opens floor n, and each line below it with a room's name four spaces
 * in (`    runs/   …`) puts that room on it; any other line two spaces in or less closes the floors.
 */
function docFloors(): Map<number, string[]> {
  const doc = readFileSync(path.join(ROOT, 'docs/reference/architecture.md'), 'utf8');
  const layout = /^## Layout\n[\s\S]*?^```\n([\s\S]*?)^```/m.exec(doc)?.[1];
  assert.ok(layout, 'architecture.md has no code block under "## Layout"');
  const floors = new Map<number, string[]>();
  let floor: string[] | undefined;
  for (const line of layout.split('\n')) {
    const opens = /^ {2}floor (\d+)\b/.exec(line);
    const room = /^ {4}([a-z][a-z-]*(?:\/|\.ts))(?: |$)/.exec(line);
    if (opens) {
      const n = Number(opens[1]);
      assert.ok(!floors.has(n), `architecture.md draws floor ${n} twice`);
      floors.set(n, (floor = []));
    } else if (room && floor) floor.push(room[1]!);
    else if (/^ {0,2}\S/.test(line)) floor = undefined;
  }
  return floors;
}

test('docs/reference/architecture.md draws the floors floors.js lists', () => {
  const drawn = docFloors();
  const listed = new Map(FLOORS.map((rooms, i) => [i + 1, [...rooms].sort()]));
  assert.deepEqual(new Map([...drawn].map(([n, rooms]) => [n, rooms.sort()])), listed);
});

const SOURCE = /\.(ts|mts|js|mjs)$/;
const IMPORTS = [
  // import x from, import type { X } from, import './x', export { x } from, export type * from
  /(?<![\w.$])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/g,
  // import('./x'): a dynamic import, or a type (`import('./x').T`)
  /(?<![\w.$])import\(\s*['"]([^'"]+)['"]\s*\)/g,
];

/** Every source file of the core, relative to plugin/. */
function coreFiles(dir = ''): string[] {
  return readdirSync(path.join(PLUGIN, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return rel === 'hosts' ? [] : coreFiles(rel);
    return SOURCE.test(e.name) ? [rel] : [];
  });
}

/** The room of a path relative to plugin/, or undefined outside plugin/ or in hosts/. */
function roomOf(rel: string): string | undefined {
  if (rel.startsWith('../') || rel.startsWith('hosts/')) return undefined;
  const slash = rel.indexOf('/');
  return slash < 0 ? rel : rel.slice(0, slash + 1);
}

/** Each import from one room to another: [file, specifier, from room, to room]. */
function roomImports(): [string, string, string, string][] {
  const edges: [string, string, string, string][] = [];
  for (const file of coreFiles()) {
    const text = readFileSync(path.join(PLUGIN, file), 'utf8');
    const from = roomOf(file)!;
    for (const re of IMPORTS) {
      for (const m of text.matchAll(re)) {
        const spec = m[1]!;
        if (!spec.startsWith('.')) continue;
        const to = roomOf(path.posix.join(path.posix.dirname(file), spec));
        if (to !== undefined && to !== from) edges.push([file, spec, from, to]);
      }
    }
  }
  return edges;
}

test('no room imports a room on its own floor or above, type imports included', () => {
  const edges = roomImports();
  assert.ok(edges.length > 100, `only ${edges.length} imports between rooms found: is the import pattern right?`);
  const upward = edges
    .filter(([, , from, to]) => !((floorOf.get(to) ?? Infinity) < (floorOf.get(from) ?? -Infinity)))
    .map(
      ([file, spec, from, to]) =>
        `plugin/${file}: '${spec}' (${from} floor ${floorOf.get(from)} -> ${to} floor ${floorOf.get(to)})`,
    );
  assert.deepEqual(upward, []);
});

test('below request/ no file names HooksSnapshot: a room declares the slice of the config it reads', () => {
  const request = floorOf.get('request/')!;
  const below = (file: string): boolean => {
    const room = roomOf(file)!;
    return room !== 'request/' && !(floorOf.get(room)! > request);
  };
  const naming = coreFiles()
    .filter((file) => below(file) && /\bHooksSnapshot\b/.test(readFileSync(path.join(PLUGIN, file), 'utf8')))
    .map((file) => `plugin/${file}`);
  assert.deepEqual(naming, []);
});
