// The product lines stay drawn: the host kit is a small door, and no core file names Gmail but the
// preset. Lint zones keep the imports in line; these keep what the lint rules cannot see.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from '../helpers/spawn-gateway.ts';

/** Every name a module exports, types included, as the compiler sees them. */
function exportedNames(file: string): string[] {
  const program = ts.createProgram([file], {
    allowImportingTsExtensions: true,
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    resolveJsonModule: true,
    skipLibCheck: true,
  });
  const source = program.getSourceFile(file);
  assert.ok(source, file);
  const checker = program.getTypeChecker();
  const symbol = checker.getSymbolAtLocation(source);
  assert.ok(symbol, `${file} is a module`);
  return checker.getExportsOfModule(symbol).map((s) => s.getName());
}

test('the host kit exports at most 20 names, none of them Gmail or channel senders', () => {
  const names = exportedNames(path.join(ROOT, 'plugin', 'host-kit.ts'));
  assert.ok(names.length <= 20, `${names.length} names: ${names.join(', ')}`);
  assert.ok(names.includes('createHooksPlugin'), names.join(', '));
  assert.deepEqual(
    names.filter((n) => /gmail|channel/i.test(n)),
    [],
  );
});

async function coreFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (full !== path.join(ROOT, 'plugin', 'hosts')) out.push(...(await coreFiles(full)));
    } else if (/\.(ts|mjs)$/.test(entry.name)) out.push(full);
  }
  return out;
}

test('no core file imports gmail/ or channels/, and the Gmail watcher metrics are not the core’s', async () => {
  for (const file of await coreFiles(path.join(ROOT, 'plugin'))) {
    const text = await readFile(file, 'utf8');
    assert.doesNotMatch(text, /from '(\.\.\/)+(gmail|channels)\//, path.relative(ROOT, file));
    assert.doesNotMatch(text, /hookgate_gmail_|hookgate_outbox_/, path.relative(ROOT, file));
  }
});

test('no core file names Gmail except the gmail preset and the presets registry', async () => {
  const preset = new Set(['plugin/mappings/gmail.ts', 'plugin/mappings/presets.ts']);
  const naming: string[] = [];
  for (const file of await coreFiles(path.join(ROOT, 'plugin'))) {
    const rel = path.relative(ROOT, file).split(path.sep).join('/');
    if (!preset.has(rel) && /gmail/i.test(await readFile(file, 'utf8'))) naming.push(rel);
  }
  assert.deepEqual(naming, []);
});
