// The docs kept true by the code. Each rule is a test; a failure lists every offender with where it is.
//
// errors: every code of ErrorCode (plugin/errors.ts) has a row `| <status> | `<code>` | … |` in
//   docs/reference/errors.md, with the status the `refuse` catalogue gives it; and the catalogue makes
//   every code of the type (so the type cannot list a code nothing sends).
// config: every key of the hooks config, mapping, gateway config and channel schemas
//   (schema/*.schema.json; a channel block is definitions.config.<name>) is documented in docs/reference/config.md, in the H2
//   section of its schema. A key is documented when a table row's first cell names it in code (its path
//   from the block, `<…>` placeholders and `[]` dropped), or the row documenting its parent names it in
//   code (`{ maxFailures, windowSeconds }`), or a row names a key under it. Array items and map values
//   count as the keys of the array or map. And every key a first cell names is a key of the schema.
// paths: every repository path named in a Markdown file, or in a comment of a source file (`//`, `/*`,
//   ` *` lines of .ts/.mts/.js/.mjs/.cjs; `#` lines of shell scripts, bin/ and .ci/), exists. A
//   repository path is a word that starts with a top-level folder (bin/ bench/ channels/ docs/ gmail/
//   plugin/ schema/ test/ test-openclaw/ transforms-example/), not preceded by a letter, digit or one of `_.-/~@<>$`,
//   and runs over letters, digits and `_.-/`; a trailing `.` or `-` is punctuation, and a glob or
//   placeholder ends it (`test/*/x` names `test/`). Relative Markdown links (`](../x.md#anchor)`) must
//   resolve too, to a file and, with an anchor, to one of its headings. Paths of other packages are written under their package (`openclaw/docs/…`).
// first-run config: every repository path the config `hookgate gateway` writes names in its comments
//   exists, and it names no README section (they move; the reference pages stay).
// token headers: a Markdown paragraph naming `x-service-token` names `x-openclaw-token` too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { refuse, type HookError } from '../../plugin/errors.ts';
import { defaultConfigText } from '../../plugin/hosts/standalone/server/settings.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');
const readJson = (file: string): Schema => JSON.parse(read(file)) as Schema;

test('every error code is in docs/reference/errors.md with the status refuse gives it', () => {
  const union = /export type ErrorCode =([^;]*);/.exec(read('plugin/errors.ts'))?.[1] ?? '';
  const codes = [...union.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!);
  assert.ok(codes.length > 20, 'ErrorCode not found in plugin/errors.ts');

  const statusOf = new Map<string, number>();
  for (const make of Object.values(refuse) as ((arg?: unknown) => HookError)[]) {
    const err = make(1);
    statusOf.set(err.code, err.status);
  }
  assert.deepEqual([...statusOf.keys()].sort(), [...codes].sort(), 'the refuse catalogue and ErrorCode differ');

  const doc = read('docs/reference/errors.md');
  const rows = new Map([...doc.matchAll(/^\|\s*(\d{3})\s*\|\s*`([a-z_]+)`\s*\|/gm)].map((m) => [m[2]!, Number(m[1])]));
  const wrong = codes
    .filter((code) => rows.get(code) !== statusOf.get(code))
    .map((code) => `${code}: ${statusOf.get(code)} in the code, ${rows.get(code) ?? 'no row'} in errors.md`);
  assert.deepEqual(wrong, []);
});

interface Schema {
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: boolean | Schema;
  definitions?: { config: Record<string, Schema> };
}

/** Every key of a schema as a path from its block: `authRateLimit.maxFailures`, `agents.list.id`. */
function schemaKeys(schema: Schema, prefix: string): string[] {
  const keys: string[] = [];
  const walk = (node: Schema, at: string): void => {
    const inner = node.items ?? node;
    const map = typeof inner.additionalProperties === 'object' ? inner.additionalProperties : undefined;
    for (const [name, child] of Object.entries({ ...map?.properties, ...inner.properties })) {
      const key = at ? `${at}.${name}` : name;
      keys.push(key);
      walk(child, key);
    }
  };
  walk(schema, prefix);
  return keys;
}

interface Row {
  names: string[];
  text: string;
}

/** The table rows of one H2 section of config.md, with the keys their first cell names. */
function sectionRows(doc: string, heading: string): Row[] {
  const start = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `config.md has no section "## ${heading}"`);
  const end = doc.indexOf('\n## ', start + 1);
  const rows: Row[] = [];
  for (const line of doc.slice(start, end < 0 ? undefined : end).split('\n')) {
    if (!line.startsWith('| `') && !line.startsWith('| $')) continue;
    const first = line.split(/(?<!\\)\|/)[1] ?? '';
    const names = [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\.<[^>]*>|\[\]/g, ''));
    rows.push({ names, text: line });
  }
  return rows;
}

function mentions(row: Row, name: string): boolean {
  const word = new RegExp(`(^|[^\\w$])${name.replace(/\$/g, '\\$')}([^\\w$]|$)`);
  return [...row.text.matchAll(/`([^`]+)`/g)].some((m) => word.test(m[1]!));
}

function undocumented(rows: Row[], keys: string[]): string[] {
  const rowFor = (key: string): Row | undefined => {
    const own = rows.find((r) => r.names.includes(key));
    if (own) return own;
    const dot = key.lastIndexOf('.');
    if (dot < 0) return undefined;
    const parent = rowFor(key.slice(0, dot));
    return parent && mentions(parent, key.slice(dot + 1)) ? parent : undefined;
  };
  const below = (key: string): boolean => rows.some((r) => r.names.some((n) => n.startsWith(`${key}.`)));
  return keys.filter((key) => !rowFor(key) && !below(key));
}

test('every config key of schema/ is in docs/reference/config.md, and every key it names is in schema/', () => {
  const doc = read('docs/reference/config.md');
  const channels = readJson('schema/channel.schema.json').definitions!.config;
  const blocks: { heading: string; keys: string[] }[] = [
    { heading: '`hooks`', keys: schemaKeys(readJson('schema/hooks-config.schema.json'), '') },
    { heading: '`hooks.mappings[]`', keys: schemaKeys(readJson('schema/mapping.schema.json'), '') },
    { heading: 'Standalone gateway', keys: schemaKeys(readJson('schema/gateway-config.schema.json'), '') },
    {
      heading: 'Channels',
      keys: Object.entries(channels).flatMap(([name, s]) => [`channels.${name}`, ...schemaKeys(s, `channels.${name}`)]),
    },
  ];
  const missing: string[] = [];
  const unknown: string[] = [];
  for (const { heading, keys } of blocks) {
    const rows = sectionRows(doc, heading);
    missing.push(...undocumented(rows, keys).map((k) => `${heading}: ${k}`));
    const known = new Set(keys);
    unknown.push(...rows.flatMap((r) => r.names.filter((n) => !known.has(n)).map((n) => `${heading}: ${n}`)));
  }
  assert.deepEqual(missing, [], 'schema keys config.md does not document');
  assert.deepEqual(unknown, [], 'keys config.md names that no schema has');
});

const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'results']);
const SOURCE = /\.(ts|mts|js|mjs|cjs)$/;

function files(dir = ''): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return SKIP_DIRS.has(e.name) ? [] : files(rel);
    return [rel];
  });
}

/** The lines of a file that may name paths: all of a Markdown file, the comments of a source file. */
function commentLines(file: string, text: string): [number, string][] {
  const lines = text.split('\n').map((line, i): [number, string] => [i + 1, line]);
  if (file.endsWith('.md')) return lines;
  if (SOURCE.test(file)) {
    return lines.flatMap(([n, line]): [number, string][] => {
      if (/^\s*(\/\*|\*)/.test(line)) return [[n, line]];
      const at = line.search(/(^|\s)\/\/ /);
      return at >= 0 ? [[n, line.slice(at)]] : [];
    });
  }
  if (file.endsWith('.sh') || /^(bin|\.ci)\//.test(file)) {
    return lines.flatMap(([n, line]): [number, string][] => {
      const at = line.search(/(^|\s)#(?!!)/);
      return at >= 0 ? [[n, line.slice(at)]] : [];
    });
  }
  return [];
}

const REPO_PATH =
  /(?<![\w./~@<>$-])((?:bin|bench|channels|docs|gmail|plugin|schema|test|test-openclaw|transforms-example)\/[\w./-]*)/g;
const MD_LINK = /\]\((?!https?:|mailto:)([^)\s]+)\)/g;

/** The anchors of a Markdown file's headings, as GitHub makes them. */
function anchors(file: string): Set<string> {
  const headings = read(file).match(/^#{1,6} .*$/gm) ?? [];
  return new Set(
    headings.map((h) =>
      h
        .replace(/^#+ /, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

test('every repository path named in a .md file or a source comment exists', () => {
  const missing: string[] = [];
  for (const file of files()) {
    const wanted = file.endsWith('.md') || SOURCE.test(file) || file.endsWith('.sh') || /^(bin|\.ci)\//.test(file);
    if (!wanted) continue;
    for (const [n, line] of commentLines(file, read(file))) {
      for (const m of line.matchAll(REPO_PATH)) {
        const named = m[1]!.replace(/[.-]+$/, '');
        if (!existsSync(path.join(ROOT, named))) missing.push(`${file}:${n}: ${named}`);
      }
      if (!file.endsWith('.md')) continue;
      for (const m of line.matchAll(MD_LINK)) {
        const [target = '', anchor] = m[1]!.split('#');
        const to = target ? path.join(path.dirname(file), target) : file;
        if (!existsSync(path.join(ROOT, to))) missing.push(`${file}:${n}: link ${m[1]!}`);
        else if (anchor !== undefined && to.endsWith('.md') && !anchors(to).has(anchor)) {
          missing.push(`${file}:${n}: link ${m[1]!} (no such heading)`);
        }
      }
    }
  }
  assert.deepEqual(missing, [], `paths that do not exist (file:line: path):\n${missing.join('\n')}`);
});

test('the first-run config names docs that exist, and no README section', () => {
  const comments = defaultConfigText()
    .split('\n')
    .filter((line) => line.trimStart().startsWith('//'));
  const named = comments.flatMap((line) => [...line.matchAll(REPO_PATH)].map((m) => m[1]!.replace(/[.-]+$/, '')));
  assert.ok(named.includes('docs/reference/config.md'), comments.join('\n'));
  assert.deepEqual(
    named.filter((p) => !existsSync(path.join(ROOT, p))),
    [],
  );
  assert.deepEqual(
    comments.filter((line) => line.includes('README')),
    [],
  );
});

test('every paragraph naming a hook-token header names all of them (transforms-example/README.md went stale)', () => {
  const stale: string[] = [];
  for (const file of files().filter((f) => f.endsWith('.md'))) {
    for (const paragraph of read(file).split(/\n\s*\n/)) {
      if (paragraph.includes('x-service-token') && !paragraph.includes('x-openclaw-token')) {
        stale.push(`${file}: ${paragraph.slice(0, 80)}…`);
      }
    }
  }
  assert.deepEqual(stale, []);
});
