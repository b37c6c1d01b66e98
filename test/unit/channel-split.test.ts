// Splitting a message at a platform's limit: properties over any text (fast-check), and the
// boundaries preferred in order (paragraph, line, sentence, space).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { jsonUtf8Weight, splitMessage, splitRanges } from '../../channels/split.ts';

const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });
const codePoints = (s: string): number => [...s].length;

/** Text with the parts that make splitting hard: breaks, sentence ends, emoji clusters, astral letters. */
const piece = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.constantFrom('\n', '\n\n', '. ', '! ', ' ', '  ', '👨‍👩‍👧‍👦', '🇫🇷', 'é', 'e\u0301', '𝔸', '漢字。', '\t'),
);
const text = fc.array(piece, { maxLength: 80 }).map((p) => p.join(''));

test('parts cover the text in order, only whitespace is dropped at cuts, and every part fits', () => {
  fc.assert(
    fc.property(text, fc.integer({ min: 8, max: 60 }), (t, max) => {
      const ranges = splitRanges(t, { max });
      let at = 0;
      for (const [start, end] of ranges) {
        assert.ok(start >= at && (end > start || t === ''));
        assert.match(t.slice(at, start), /^\s*$/u, 'only whitespace between parts');
        assert.ok(codePoints(t.slice(start, end)) <= max, 'a part fits the limit');
        at = end;
      }
      assert.match(t.slice(at), /^\s*$/u);
    }),
    { numRuns: 500 },
  );
});

test('a cut never falls inside a surrogate pair, nor inside a grapheme cluster shorter than the limit', () => {
  fc.assert(
    fc.property(text, fc.integer({ min: 8, max: 60 }), (t, max) => {
      const boundaries = new Set([...graphemes.segment(t)].map((s) => s.index));
      boundaries.add(t.length);
      const longest = Math.max(0, ...[...graphemes.segment(t)].map((s) => codePoints(s.segment)));
      for (const [start, end] of splitRanges(t, { max })) {
        for (const i of [start, end]) {
          const code = t.charCodeAt(i);
          assert.ok(!(code >= 0xdc00 && code <= 0xdfff), `cut at ${i} is inside a surrogate pair`);
          if (longest <= max) assert.ok(boundaries.has(i), `cut at ${i} is inside a grapheme cluster`);
        }
      }
    }),
    { numRuns: 500 },
  );
});

test('a text within the limit is one part, untouched', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 50 }), (t) => {
      assert.deepEqual(splitMessage(t, { max: 50 }), [t]);
    }),
  );
});

test('boundaries in order: paragraph, then line, then sentence, then space', () => {
  const para = `${'a'.repeat(30)}.\n\n${'b'.repeat(30)}`;
  assert.deepEqual(splitMessage(para, { max: 40 }), [`${'a'.repeat(30)}.`, 'b'.repeat(30)]);
  const lines = `${'a'.repeat(15)}. ${'a'.repeat(10)}\n${'b'.repeat(20)}`;
  assert.deepEqual(splitMessage(lines, { max: 40 }), [`${'a'.repeat(15)}. ${'a'.repeat(10)}`, 'b'.repeat(20)]);
  const sentences = `${'a'.repeat(25)}. ${'b'.repeat(5)} ${'c'.repeat(20)}`;
  assert.deepEqual(splitMessage(sentences, { max: 40 }), [`${'a'.repeat(25)}.`, `${'b'.repeat(5)} ${'c'.repeat(20)}`]);
  const words = `${'a'.repeat(25)} ${'b'.repeat(25)}`;
  assert.deepEqual(splitMessage(words, { max: 40 }), ['a'.repeat(25), 'b'.repeat(25)]);
  // No boundary at all: cut at the limit, never inside the family emoji.
  const family = '👨‍👩‍👧‍👦';
  const parts = splitMessage(`${'x'.repeat(8)}${family}${'y'.repeat(8)}`, { max: 10 });
  assert.deepEqual(parts, ['x'.repeat(8), `${family}${'y'.repeat(3)}`, 'y'.repeat(5)]);
});

test('the Teams weight counts the card bytes of the text: escapes and UTF-8', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (t) => {
      const weight = [...t].reduce((n, ch) => n + jsonUtf8Weight(ch.codePointAt(0)!), 0);
      assert.equal(weight, Buffer.byteLength(JSON.stringify(t)) - 2);
    }),
  );
  for (const part of splitMessage('"é"\n'.repeat(100), { max: 50, weight: jsonUtf8Weight }))
    assert.ok(Buffer.byteLength(JSON.stringify(part)) - 2 <= 50);
});
