// The OpenClaw manifest's configSchema, made from schema/: the hooks config schema with every $ref
// inlined (OpenClaw reads the manifest alone, so it cannot follow a ref into another file), without
// `$schema` and `$id`. test/unit/openclaw-manifest.test.ts checks the manifest against it; after a
// schema change, `npx tsx test/helpers/manifest-schema.ts` writes it into openclaw.plugin.json.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const MANIFEST = path.join(ROOT, 'openclaw.plugin.json');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const readSchema = (file: string): Json => JSON.parse(readFileSync(path.join(ROOT, 'schema', file), 'utf8')) as Json;

/** `channel.schema.json#/definitions/target` -> that node of that file, its own refs inlined too. */
function resolveRef(ref: string): Json {
  const [file, pointer = ''] = ref.split('#');
  let node = readSchema(file!);
  for (const part of pointer.split('/').filter(Boolean)) {
    node = (node as Record<string, Json>)[part]!;
  }
  return inline(node);
}

function inline(node: Json): Json {
  if (Array.isArray(node)) return node.map(inline);
  if (node === null || typeof node !== 'object') return node;
  if (typeof node.$ref === 'string') return resolveRef(node.$ref);
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key !== '$schema' && key !== '$id') out[key] = inline(value);
  }
  return out;
}

export function manifestConfigSchema(): Json {
  return inline(readSchema('hooks-config.schema.json'));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const manifest = JSON.parse(readFileSync(MANIFEST, 'utf8')) as Record<string, Json>;
  manifest.configSchema = manifestConfigSchema();
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
}
