// Unit tests of the JSON5 text editor: edits land where the layout says, comments and quotes stay, and
// on any generated document (compact or indented, with comments) the result reads back as intended.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import JSON5 from 'json5';
import {
  appendItem,
  deleteProperty,
  editObject,
  type Json,
  Json5EditError,
  scan,
  setProperty,
  setPropertySource,
  sourceAt,
} from '../../plugin/hosts/standalone/cli/support/json5-edit.ts';

const FILE = `// top
{
  a: 1, // one
  'b-c': { d: "x", },
  list: [
    "p",
  ],
  inline: { x: 1, y: [1, 2] },
  default: true,
  empty: {},
}
`;

test('set replaces a value in place and adds a key after the last one, in the neighbours’ layout', () => {
  assert.equal(setProperty(FILE, ['a'], 1), FILE, 'an equal value is left as written');
  assert.ok(setProperty(FILE, ['a'], 2).includes('  a: 2, // one\n'));
  const added = setProperty(FILE, ['z'], { k: 'v' });
  assert.ok(added.endsWith('  empty: {},\n  z: {\n    k: "v",\n  },\n}\n'), added);
  assert.ok(setProperty(FILE, ['b-c', 'e'], 2).includes(`'b-c': { d: "x", e: 2, },`));
  assert.ok(setProperty(FILE, ['inline', 'z'], true).includes('inline: { x: 1, y: [1, 2], z: true },'));
  assert.ok(setProperty(FILE, ['empty', 'k'], 1).includes('  empty: {\n    k: 1,\n  },'));
  assert.ok(setProperty('{ a: 1 // last\n}', ['b'], 2).startsWith('{ a: 1, // last\n'));
});

test('append adds to a list; delete removes a key with its line or its comma', () => {
  assert.ok(appendItem(FILE, ['list'], 'q').includes('  list: [\n    "p",\n    "q",\n  ],'));
  assert.ok(appendItem(FILE, ['inline', 'y'], 3).includes('y: [1, 2, 3]'));
  assert.ok(appendItem('{ l: [] }', ['l'], 'g').includes('l: ["g"]'));
  const gone = deleteProperty(FILE, ['a']);
  assert.ok(!gone.includes('// one') && gone.includes("// top\n{\n  'b-c'"));
  assert.ok(deleteProperty(FILE, ['inline', 'y']).includes('inline: { x: 1 },'));
  assert.ok(deleteProperty(FILE, ['inline', 'x']).includes('inline: { y: [1, 2] },'));
  assert.throws(() => appendItem(FILE, ['a'], 1), Json5EditError);
  assert.throws(() => scan('{ a: 1 } x'), Json5EditError);
  assert.throws(() => scan('{ a: "x\n" }'), Json5EditError);
});

const key = fc.oneof(fc.constantFrom('a', 'b', 'default', 'hooks', 'x y', "it's", 'ünï'), fc.string({ maxLength: 6 }));
const scalar = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));
const json: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(key, tie('v'), { maxKeys: 4, noNullPrototype: true }),
  ),
})).v;

/** JSON5 text for value in one of several layouts, with comments between entries. */
function write(value: Json, layout: number): string {
  const text =
    layout === 0
      ? JSON.stringify(value)
      : layout === 1
        ? JSON5.stringify(value, null, 2)
        : JSON5.stringify(value, null, '\t');
  return layout === 2 ? `/* head */\n${text.replace(/,\n/g, ', // note\n')}\n` : text;
}

test('property: every edit reads back as the intended value, whatever the layout', () => {
  fc.assert(
    fc.property(
      fc.dictionary(key, json, { maxKeys: 5, noNullPrototype: true }),
      fc.integer({ min: 0, max: 2 }),
      key,
      json,
      (doc, layout, k, v) => {
        const text = write(doc, layout);
        assert.deepEqual(JSON5.parse(setProperty(text, [k], v)), { ...doc, [k]: v });
        const { [k]: _gone, ...rest } = doc;
        assert.deepEqual(JSON5.parse(deleteProperty(text, [k])), rest);
        for (const [name, inner] of Object.entries(doc)) {
          if (Array.isArray(inner))
            assert.deepEqual(JSON5.parse(appendItem(text, [name], v)), { ...doc, [name]: [...inner, v] });
          if (inner !== null && typeof inner === 'object' && !Array.isArray(inner))
            assert.deepEqual(JSON5.parse(setProperty(text, [name, k], v)), { ...doc, [name]: { ...inner, [k]: v } });
        }
      },
    ),
    { numRuns: 400 },
  );
});

test('a value moved with its comments, re-indented; list items edited in place keep the comments between them', () => {
  const text = `{
  from: {
    // why a
    a: 1,
    list: [
      { id: 'x', n: 1 }, // first
      { id: 'y', n: 2 },
    ],
  },
  to: { deep: {} },
}
`;
  const moved = setPropertySource(text, ['to', 'deep', 'copy'], sourceAt(text, ['from'])!);
  assert.match(moved, /\n {6}\/\/ why a\n {6}a: 1,/);
  const value = {
    a: 1,
    list: [
      { id: 'x', n: 1 },
      { id: 'y', n: 2 },
    ],
  };
  assert.deepEqual(JSON5.parse(moved), { from: value, to: { deep: { copy: value } } });
  const edited = editObject(text, ['from'], value, {
    a: 1,
    list: [
      { id: 'x', n: 10 },
      { id: 'y', n: 2, z: true },
    ],
  });
  assert.ok(edited.includes('// first') && edited.includes('// why a'), edited);
  assert.deepEqual(JSON5.parse(edited).from.list, [
    { id: 'x', n: 10 },
    { id: 'y', n: 2, z: true },
  ]);
  assert.equal(sourceAt(text, ['nothing']), undefined);
});
